// `unkey-infra deploy`: creates a deployment (POST /v1/deployments) and, with --wait, follows it
// to ready or failed. Without --regions ctrl decides: the environment's regions, else its
// --default-regions (in `dev`, every region of the local stack).
import type { ClientFlags } from '../client';
import type { BodyOf } from '../api-paths';
import { usageError, EXIT_OK } from '../errors';
import type { CommandContext } from './context';
import { followDeployment } from './follow';
import { newIdempotencyKey } from '../retry';

export interface DeployOptions extends ClientFlags {
  image?: string;
  buildContext?: string;
  regions?: string[];
  replicas?: number;
  cpu?: number;
  memory?: number;
  port?: number;
  env?: Record<string, string>;
  environment?: string;
  strategy?: string;
  steps?: number[];
  pause?: string;
  analysisQuery?: string;
  analysisMin?: number;
  analysisMax?: number;
  analysisInterval?: string;
  prometheusUrl?: string;
  /** Issue 27: `compare` judges the canary against its stable instead of min/max. */
  judge?: string;
  direction?: string;
  tolerance?: number;
  confidence?: number;
  minSamples?: number;
  promoteEarly?: boolean;
  wait?: boolean;
  timeout?: number;
  json?: boolean;
  version?: string;
  autoscale?: string;
  force?: boolean;
}

/** API field → the flag that sets it, so a 400 names what the user typed. */
const FLAGS: Record<string, string> = {
  image: '--image',
  buildContext: '--build-context',
  regions: '--regions',
  replicas: '--replicas',
  cpuMillicores: '--cpu',
  memoryMib: '--memory',
  port: '--port',
  env: '--env',
  environmentId: '--environment',
  strategy: '--strategy',
  'strategy.steps': '--steps',
  'strategy.analysis.interval': '--analysis-interval',
  'strategy.analysis.prometheus.url': '--prometheus-url',
  'strategy.analysis.prometheus.query': '--analysis-query',
  'strategy.analysis.prometheus.min': '--analysis-min',
  'strategy.analysis.prometheus.max': '--analysis-max',
  'strategy.analysis.judge': '--judge',
  'strategy.analysis.direction': '--direction',
  'strategy.analysis.tolerance': '--tolerance',
  'strategy.analysis.confidence': '--confidence',
  'strategy.analysis.minSamples': '--min-samples',
  'strategy.analysis.promoteEarly': '--promote-early',
  version: '--version',
  autoscaling: '--autoscale',
};

/** `2:10` or `2:10:60` → the API's autoscaling object; ranges are the API's to judge. */
export function autoscaleFromFlag(v: string): { minReplicas: number; maxReplicas: number; cpuUtilization?: number } {
  const m = /^(\d+):(\d+)(?::(\d+)%?)?$/.exec(v.trim());
  if (!m) throw usageError(`--autoscale expects MIN:MAX or MIN:MAX:CPU%, e.g. 2:10:70, got "${v}"`);
  return { minReplicas: Number(m[1]), maxReplicas: Number(m[2]), ...(m[3] ? { cpuUtilization: Number(m[3]) } : {}) };
}

/** The flag behind an API field: the longest mapped prefix (a step's pause is --pause). */
export function deployFlagFor(field: string): string | undefined {
  if (/^strategy\.steps\.\d+\.pause$/.test(field)) return '--pause';
  const parts = field.split('.');
  for (let n = parts.length; n > 0; n--) {
    const flag = FLAGS[parts.slice(0, n).join('.')];
    if (flag) return flag;
  }
  return undefined;
}

/**
 * The `strategy` of the body from the flags; undefined leaves the server's default (rolling).
 * Every canary step gets the one --pause. Ranges are the API's to judge.
 */
export function strategyFromFlags(o: DeployOptions): Record<string, unknown> | undefined {
  const type = o.strategy ?? (o.steps ? 'canary' : undefined);
  if (!type) {
    if (o.analysisQuery || o.prometheusUrl) throw usageError('--analysis-query needs --strategy canary or blue-green');
    return undefined;
  }
  if (type !== 'rolling' && type !== 'canary' && type !== 'blue-green') throw usageError(`--strategy must be rolling, canary or blue-green, not ${type}`);
  if (type !== 'canary' && (o.steps || o.pause)) throw usageError('--steps and --pause are for --strategy canary');
  const analysis =
    o.analysisQuery || o.prometheusUrl
      ? {
          ...(o.analysisInterval ? { interval: o.analysisInterval } : {}),
          ...compareFromFlags(o),
          prometheus: { url: o.prometheusUrl, query: o.analysisQuery, ...(o.analysisMin !== undefined ? { min: o.analysisMin } : {}), ...(o.analysisMax !== undefined ? { max: o.analysisMax } : {}) },
        }
      : undefined;
  if (type === 'rolling') return { type };
  if (type === 'blue-green') return { type, ...(analysis ? { analysis } : {}) };
  if (!o.steps) throw usageError('--strategy canary needs --steps, e.g. --steps 10,50 --pause 30s');
  return { type, steps: o.steps.map((weight) => ({ weight, pause: o.pause ?? '1m' })), ...(analysis ? { analysis } : {}) };
}

/** The compare judge's flags as analysis fields; the API judges their values (and the mix). */
function compareFromFlags(o: DeployOptions): Record<string, unknown> {
  const fields = { judge: o.judge, direction: o.direction, tolerance: o.tolerance, confidence: o.confidence, minSamples: o.minSamples, promoteEarly: o.promoteEarly };
  return Object.fromEntries(Object.entries(fields).filter(([, v]) => v !== undefined));
}

export async function deployCommand(o: DeployOptions, ctx: CommandContext): Promise<number> {
  if (!o.image === !o.buildContext) throw usageError('give exactly one of --image I or --build-context DIR');
  const client = await ctx.client(o);
  strategyFromFlags(o); // usage errors before any request
  if (o.autoscale && o.replicas !== undefined) throw usageError('give --replicas or --autoscale, not both');
  const autoscaling = o.autoscale ? autoscaleFromFlag(o.autoscale) : undefined;
  const body = {
    ...(o.image ? { image: o.image } : { buildContext: o.buildContext }),
    // Without --regions ctrl decides (the environment's, else its --default-regions).
    ...(o.regions ? { regions: o.regions } : {}),
    ...(o.version ? { version: o.version } : {}),
    ...(autoscaling ? { autoscaling } : {}),
    ...(o.force ? { force: true } : {}),
    ...(o.replicas !== undefined ? { replicas: o.replicas } : {}),
    ...(o.cpu !== undefined ? { cpuMillicores: o.cpu } : {}),
    ...(o.memory !== undefined ? { memoryMib: o.memory } : {}),
    ...(o.port !== undefined ? { port: o.port } : {}),
    ...(o.env ? { env: o.env } : {}),
    ...(o.environment ? { environmentId: o.environment } : {}),
  };
  const strategy = strategyFromFlags(o);
  if (strategy) Object.assign(body, { strategy });
  // The flags' values go as given: ranges and names are the API's to judge (its 400 names them).
  // Retried through a failover: the key makes a repeat answer with the deployment the first call made.
  const created = await client.post('/v1/deployments', { body: body as BodyOf<'/v1/deployments', 'post'>, retry: true, idempotencyKey: newIdempotencyKey() });
  if (!o.wait) {
    ctx.io.out(o.json ? `${JSON.stringify(created, null, 2)}\n` : `${created.id}\n`);
    return EXIT_OK;
  }
  if (!o.json) ctx.io.out(`created deployment ${created.id} (${created.regions.join(', ')}), version ${created.version}\n`);
  return followDeployment(ctx, client, created.id, { json: Boolean(o.json), timeoutMs: o.timeout });
}

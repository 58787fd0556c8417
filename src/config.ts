// Configuration for every mode: one zod schema per mode, fed from command-line flags and
// `UNKEY_INFRA_*` environment variables (flag wins). This is the only module that reads
// process.env; everything else receives a typed config object. Every problem is collected and
// reported at once, because fixing a deployment one error per restart is miserable.
import { durationProblem, parseDuration } from './duration';
import { z } from 'zod';
import { LOG_LEVELS } from './log';
import { badFeature, badRegion, FEATURE_NAMES, nameList, outboundAllow, parseListen, regionPattern, sentinelImages } from './config-lists';
import { imageAllowed } from './image-allow';

export { FEATURE_NAMES, parseOutboundAllow, regionPattern } from './config-lists';

export const ENV_PREFIX = 'UNKEY_INFRA_';

export class ConfigError extends Error {
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  - ${p}`).join('\n')}`);
    this.name = 'ConfigError';
    this.problems = problems;
  }
}

/** `--database-url` ↔ `databaseUrl` ↔ `UNKEY_INFRA_DATABASE_URL`. */
export const flagName = (key: string) => key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`);
export const envName = (key: string) => ENV_PREFIX + flagName(key).replace(/-/g, '_').toUpperCase();

export { parseListen, type ListenAddress } from './config-lists';

const listen = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((v, ctx) => {
      const r = parseListen(v);
      if (typeof r === 'string') {
        ctx.addIssue({ code: 'custom', message: r });
        return z.NEVER;
      }
      return r;
    });

/** Durations are read by the one parser the API uses too (src/duration.ts): a bare number is refused. */
export { parseDuration } from './duration';

export const duration = (fallback: string) =>
  z
    .string()
    .default(fallback)
    .transform((v, ctx) => {
      const ms = parseDuration(v);
      if (ms === undefined || ms <= 0) {
        ctx.addIssue({ code: 'custom', message: ms === undefined ? durationProblem(v) : `expected a positive duration like 30s or 5m, got "${v}"` });
        return z.NEVER;
      }
      return ms;
    });

const boolFromString = z.union([z.boolean(), z.string()]).transform((v, ctx) => {
  if (typeof v === 'boolean') return v;
  if (/^(1|true|yes|on)$/i.test(v)) return true;
  if (/^(0|false|no|off|)$/i.test(v)) return false;
  ctx.addIssue({ code: 'custom', message: `expected true or false, got "${v}"` });
  return z.NEVER;
});

const databaseUrl = z
  .string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') })
  .refine((v) => /^postgres(ql)?:\/\//.test(v), 'must be a postgres:// or postgresql:// URL');

const logLevel = z.enum(LOG_LEVELS).default('info');

/** OTLP/HTTP base URL traces go to (src/tracing); absent: tracing off. */
const otlpEndpoint = z
  .string()
  .optional()
  .transform((v) => (v ? v.trim() || undefined : undefined))
  .refine((v) => v === undefined || /^https?:\/\/[^/]/.test(v), 'must be an http(s) URL, e.g. http://127.0.0.1:4318');

/** Standard OpenTelemetry variables that fill a key when neither its flag nor its
 *  UNKEY_INFRA_* variable is set (collectors and operators already set these). */
const STANDARD_ENV: Record<string, string> = { otlpEndpoint: 'OTEL_EXPORTER_OTLP_ENDPOINT' };

/**
 * A standard OpenTelemetry variable is the environment's, not the operator's word to us (an
 * operator or a cluster-wide default may inject it): OTEL_SDK_DISABLED=true keeps tracing off,
 * and a value we cannot use is ignored with a warning rather than refusing to start.
 */
function standardEnv(env: NodeJS.ProcessEnv, name: string): string | undefined {
  const v = env[name]?.trim();
  if (!v || env.OTEL_SDK_DISABLED?.toLowerCase() === 'true') return undefined;
  if (/^https?:\/\/[^/]/.test(v)) return v;
  process.stderr.write(`unkey-infra: ignoring ${name}=${JSON.stringify(v)}: not an http(s) URL (tracing stays off)\n`);
  return undefined;
}

/** `us-east-1=tok1,eu-west-1=tok2` → { 'us-east-1': 'tok1', … } */
const agentTokens = z
  .string()
  .optional()
  .transform((v, ctx) => {
    const out: Record<string, string> = {};
    if (!v) return out;
    for (const pair of v.split(',').map((s) => s.trim()).filter(Boolean)) {
      const eq = pair.indexOf('=');
      const region = pair.slice(0, eq).trim();
      const token = pair.slice(eq + 1).trim();
      if (eq <= 0 || !token) {
        ctx.addIssue({ code: 'custom', message: `expected REGION=TOKEN pairs separated by commas, got "${pair.split('=')[0]}=…"` });
        continue;
      }
      if (!regionPattern.test(region)) ctx.addIssue({ code: 'custom', message: `invalid region name "${region}"` });
      if (token.length < MIN_TOKEN_CHARS) ctx.addIssue({ code: 'custom', message: `token of region "${region}" must be at least ${MIN_TOKEN_CHARS} characters` });
      out[region] = token;
    }
    return out;
  });

/** Every token (admin, agent): a shorter one can be guessed over the network. (The store
 *  keeps the same floor for tokens it is given: agent-tokens.ts MIN_TOKEN_LENGTH.) */
export const MIN_TOKEN_CHARS = 16;

/** krane's own token: ctrl stores no shorter one, so a short one is a typo, said at start
 *  rather than as a 401. */
const agentToken = z
  .string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') })
  .min(MIN_TOKEN_CHARS, `must be at least ${MIN_TOKEN_CHARS} characters`);


const adminToken = z
  .string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') })
  .min(MIN_TOKEN_CHARS, `must be at least ${MIN_TOKEN_CHARS} characters`);

// ---- ctrl's limits, outbound policy and build confinement (SECURITY.md lists them all) ----

/** The image new sentinels start with unless --sentinel-image says otherwise (seed 000's). */
export const DEFAULT_SENTINEL_IMAGE = 'ghcr.io/unkeyed/sentinel:latest';

const positiveInt = (fallback: number) => z.coerce.number().int('must be a whole number').min(1, 'must be at least 1').default(fallback);

/** Defaults of ctrl's connection limits (reasons below, on each option). */
export const CTRL_LIMIT_DEFAULTS = { requestTimeout: '30s', idleTimeout: '15m', maxConnections: 10_000 } as const;

const ctrlLimits = {
  /** Directory that every build context must lie in (required with --build-command). */
  buildRoot: z.string().min(1).optional(),
  outboundAllow,
  /** A client must deliver its whole request (headers and body) within this; 30 s is ample
   *  for the largest body (4 MB) on any link an agent or operator uses, and short enough that a
   *  client trickling bytes cannot hold a connection for long. Responses are not limited by it. */
  requestTimeout: duration(CTRL_LIMIT_DEFAULTS.requestTimeout),
  /** A socket with no traffic either way for this long is closed. Long enough for the longest
   *  silent call (a sentinel deploy waits up to --sentinel-timeout; the feed's long polls send a
   *  heartbeat every 10 s and the WebSocket is exempt), so it only ever closes dead peers. */
  idleTimeout: duration(CTRL_LIMIT_DEFAULTS.idleTimeout),
  /** Open connections at once; beyond it new ones are closed on accept. 10,000 covers 1,000
   *  agents (a stream and a report connection each) and the API's clients many times over,
   *  while staying well under a typical file-descriptor limit (65,536). */
  maxConnections: positiveInt(CTRL_LIMIT_DEFAULTS.maxConnections),
};

/** A Kubernetes resource quantity, as kube-sim's node options take it (a positive decimal and a suffix). */
const QUANTITY = /^(?=.*[1-9])\d+(\.\d+)?(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/;

export const schemas = {
  ctrl: z.object({
    databaseUrl,
    /** A session straight to the primary for LISTEN/NOTIFY, when --database-url is a pooler in
     *  transaction mode (PgBouncer), where a LISTEN outlives no transaction. Default: --database-url. */
    databaseDirectUrl: databaseUrl.optional(),
    /** A hot standby that full syncs read (issue 35); the primary when it lags (src/sync/snapshot-source.ts). */
    databaseReadUrl: databaseUrl.optional(),
    listen: listen('127.0.0.1:7070'),
    adminToken,
    agentTokens,
    noMigrate: boolFromString.default(false),
    /** Shell command that builds an image from a build context (see src/workflow/deploy/build.ts). */
    buildCommand: z.string().optional(),
    deployTimeout: duration('5m'),
    /** How long a crashed replica's workflows wait before another replica resumes them. */
    engineLease: duration('30s'),
    sentinelTimeout: duration('10m'),
    /** Regions (DESIGN section 10): no sign of life this long is offline; deploys wait this long for one. */
    agentOfflineAfter: duration('30s'),
    offlineGrace: duration('60s'),
    /** Image new sentinels start with; fleet rollouts change it afterwards. */
    sentinelImage: z.string().min(1).default(DEFAULT_SENTINEL_IMAGE),
    /** Images sentinels may run (issue 32): repository prefixes or digests; empty: any an unscoped credential sets. */
    sentinelImages,
    /** Parent domain of generated hostnames (`<deployment>.<apex>`, `<env>-<app>.<apex>`). */
    apexDomain: z
      .string()
      .regex(/^[a-z0-9]([a-z0-9.-]{0,200}[a-z0-9])?$/, 'must be a lowercase DNS name')
      .default('unkey.local'),
    ...ctrlLimits,
    /** Audit rows older than this are deleted (issue 26); 90 days covers a quarter's review. */
    auditRetention: duration('90d'),
    /** Requests per second one API key may make on one replica (0: no limit). 20 is far above
     *  what the CLI or the web view makes and low enough that one runaway script cannot crowd
     *  out every other client of a replica. */
    keyRateLimit: z.coerce.number().int('must be a whole number').min(0, 'must be at least 0').default(20),
    /** Requests per second all keys of one workspace may make together on one replica (0: no
     *  limit; issue 32). Five keys' worth: minting keys does not multiply a tenant's rate. */
    workspaceRateLimit: z.coerce.number().int('must be a whole number').min(0, 'must be at least 0').default(100),
    defaultRegions: nameList('', badRegion, 'regions'),
    defaultFeatures: nameList<(typeof FEATURE_NAMES)[number]>(FEATURE_NAMES.join(','), badFeature, 'features'),
    otlpEndpoint,
    logLevel,
  })
    .refine((c) => !c.buildCommand || !!c.buildRoot, { path: ['buildRoot'], message: 'is required with --build-command: build contexts must lie inside it', when: () => true })
    .refine((c) => !Array.isArray(c.sentinelImages) || typeof c.sentinelImage !== 'string' || imageAllowed(c.sentinelImages, c.sentinelImage), {
      path: ['sentinelImage'],
      message: 'must be one of --sentinel-images: new sentinels start with it',
      when: () => true,
    })
    .refine((c) => !(typeof c.idleTimeout === 'number' && typeof c.sentinelTimeout === 'number') || c.idleTimeout > c.sentinelTimeout, {
      path: ['idleTimeout'],
      message: 'must be longer than --sentinel-timeout, or a sentinel deploy that waits for its result is cut off',
      when: () => true,
    }),
  migrate: z.object({
    databaseUrl,
    logLevel,
  }),
  /** One-shot operator commands that only need the database (`ctrl tokens ls|revoke`, `ctrl feed rotate-epoch`). */
  dbCommand: z.object({
    databaseUrl,
    logLevel: logLevel.default('warn'),
  }),
  tokens: z.object({
    databaseUrl,
    region: z
      .string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') })
      .regex(regionPattern, 'must be a DNS-safe region name like us-east-1'),
    logLevel: logLevel.default('warn'),
  }),
  krane: z.object({
    region: z
      .string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') })
      .regex(regionPattern, 'must be a DNS-safe region name like us-east-1'),
    controlPlane: z
      .string({ error: (i) => (i.input === undefined ? 'is required' : 'must be a string') })
      .url('must be an http(s) URL')
      .refine((v) => /^https?:\/\//.test(v), 'must be an http(s) URL'),
    token: agentToken,
    /** Absent: in-cluster config, then $KUBECONFIG (resolved by the kube client loader). */
    kubeconfig: z.string().optional(),
    listen: listen('127.0.0.1:7071'),
    resyncInterval: duration('5m'),
    /** Replicas elect a leader through the Lease krane-<region> in namespace unkey; only it streams and applies. */
    leaderElect: boolFromString.default(true),
    /** Secret name added as imagePullSecret to workloads, for private registries. */
    imagePullSecret: z.string().optional(),
    /** Allows plain http to a control plane that is not on this machine (the token travels in clear). */
    insecure: boolFromString.default(false),
    /**
     * The GC brake: a pass that would delete more than this share of krane's managed objects
     * (and more than a handful) waits for an operator. Half: an empty or wrong database must
     * never empty a region, while ordinary clean-ups stay far below it.
     */
    gcMaxFraction: z.coerce.number().gt(0, 'must be greater than 0').max(1, 'must be at most 1').default(0.5),
    otlpEndpoint,
    logLevel,
    /** The sentinel image's probe endpoints (seed 000: one health path on 8040 for both). */
    sentinelLivenessPath: z.string().regex(/^\/[!-~]*$/, 'must be an absolute URL path like /_unkey/internal/health').default('/_unkey/internal/health'),
    sentinelReadinessPath: z.string().regex(/^\/[!-~]*$/, 'must be an absolute URL path like /_unkey/internal/health').default('/_unkey/internal/health'),
    /** Flat JSON or KEY=VALUE file krane keeps as the Secret sentinel-credentials; read by krane only. */
    sentinelSecretsFile: z.string().min(1).optional(),
  }).superRefine((c, ctx) => {
    if (!c.insecure && c.controlPlane.startsWith('http://') && !isLoopbackUrl(c.controlPlane)) {
      ctx.addIssue({ code: 'custom', path: ['controlPlane'], message: 'must use https when the control plane is not on this machine (the agent token would travel in clear); pass --insecure to allow plain http' });
    }
  }),
  dev: z.object({
    regions: nameList('us-east-1,eu-west-1', badRegion, 'regions', true),
    dataDir: z.string().min(1).default('.unkey-infra/dev'),
    fresh: boolFromString.default(false),
    listen: listen('127.0.0.1:7070'),
    readyDelay: z.coerce.number().int().min(0).default(1000),
    otlpEndpoint,
    logLevel: logLevel.default('warn'),
    /** As ctrl's: lets the embedded ctrl query a local Prometheus (a gated canary on a laptop). */
    outboundAllow,
    /** As ctrl's: the images sentinels may run (dev's sentinels start with the default image, so it must be one). */
    sentinelImages,
  }).refine((c) => !Array.isArray(c.sentinelImages) || imageAllowed(c.sentinelImages, DEFAULT_SENTINEL_IMAGE), {
    path: ['sentinelImages'],
    message: `must allow ${DEFAULT_SENTINEL_IMAGE}, the image dev's sentinels start with`,
    when: () => true,
  }),
  kraneGc: z.object({
    token: agentToken,
    /** krane's --listen: the confirmation is sent to krane's own port. */
    listen: listen('127.0.0.1:7071'),
    confirm: boolFromString.default(false).refine((v) => v, 'is required: say --confirm to lift the GC brake'),
  }),
  kubeSim: z.object({
    port: z.coerce.number().int().min(0).max(65535).default(6443),
    host: z.string().default('127.0.0.1'),
    readyDelay: z.coerce.number().int().min(0).default(1000),
    kubeconfigOut: z.string().optional(),
    logLevel,
    /** Serve no CiliumNetworkPolicy: a cluster without Cilium's CRD. */
    noCilium: boolFromString.default(false),
    /**
     * Nodes with room (seed 001's "resource limits"): any of these turns on the accounting of
     * what pods request per node; absent, nodes have no limit (src/kube-sim/workloads/capacity.ts).
     */
    nodes: z.coerce.number().int().min(1).max(250).optional(),
    nodeCpu: z.string().regex(QUANTITY, 'must be a quantity such as 4 or 3500m').optional(),
    nodeMemory: z.string().regex(QUANTITY, 'must be a quantity such as 8Gi or 512Mi').optional(),
  }),
};

/** Loopback hosts: plain http to them never leaves the machine. */
function isLoopbackUrl(url: string): boolean {
  const host = new URL(url).hostname.replace(/^\[|\]$/g, '');
  return host === 'localhost' || host === '::1' || /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host);
}

/**
 * Whether this process runs in a Kubernetes pod (the kubelet sets KUBERNETES_SERVICE_HOST), so
 * krane loads in-cluster credentials when no kubeconfig is named. Read here, with every other
 * environment variable.
 */
export function runsInCluster(env: NodeJS.ProcessEnv = process.env): boolean {
  return Boolean(env.KUBERNETES_SERVICE_HOST);
}

/** What a build command inherits from ctrl's environment (src/workflow/deploy/build.ts): PATH to
 *  find its tools and HOME for their own configuration (registry credentials); nothing else. */
export function buildToolEnv(env: NodeJS.ProcessEnv = process.env): { PATH?: string | undefined; HOME?: string | undefined } {
  return { PATH: env.PATH, HOME: env.HOME };
}

export type Mode = keyof typeof schemas;
export type ConfigOf<M extends Mode> = z.output<(typeof schemas)[M]>;
export type CtrlConfig = ConfigOf<'ctrl'>;
export type MigrateConfig = ConfigOf<'migrate'>;
export type TokensConfig = ConfigOf<'tokens'>;
export type DbCommandConfig = ConfigOf<'dbCommand'>;
export type KraneConfig = ConfigOf<'krane'>;
export type KubeSimConfig = ConfigOf<'kubeSim'>;
export type DevConfig = ConfigOf<'dev'>;

/**
 * Merges flags over environment for the keys of the mode's schema and validates the result.
 * `flags` uses camelCase keys as commander produces them; undefined means "not given".
 */
export function loadConfig<M extends Mode>(
  mode: M,
  flags: Record<string, unknown>,
  env: NodeJS.ProcessEnv = process.env,
): ConfigOf<M> {
  const schema = schemas[mode] as z.ZodObject;
  const raw: Record<string, unknown> = {};
  for (const key of Object.keys(schema.shape)) {
    const fromFlag = flags[key];
    const standard = STANDARD_ENV[key];
    raw[key] = fromFlag !== undefined ? fromFlag : (env[envName(key)] ?? (standard ? standardEnv(env, standard) : undefined));
  }
  const parsed = schema.safeParse(raw);
  if (!parsed.success) {
    const problems = parsed.error.issues.map((i) => {
      const key = String(i.path[0] ?? '');
      return key ? `--${flagName(key)} (${envName(key)}): ${i.message}` : i.message;
    });
    throw new ConfigError(problems);
  }
  return parsed.data as ConfigOf<M>;
}

/**
 * Supports `--mode=ctrl` / `--mode ctrl` / `UNKEY_INFRA_MODE=ctrl` for entrypoints that pass the
 * mode as a flag: rewrites the argument list so the mode becomes the subcommand. An explicit
 * subcommand wins over the environment variable.
 */
export function modeFromArgv(argv: string[], env: NodeJS.ProcessEnv = process.env): string[] {
  const args = [...argv];
  let mode: string | undefined;
  const i = args.findIndex((a) => a === '--mode' || a.startsWith('--mode='));
  if (i >= 0) {
    const a = args[i]!;
    if (a === '--mode') {
      mode = args[i + 1];
      args.splice(i, 2);
    } else {
      mode = a.slice('--mode='.length);
      args.splice(i, 1);
    }
  } else if (env[`${ENV_PREFIX}MODE`] && (args.length === 0 || args[0]!.startsWith('-'))) {
    mode = env[`${ENV_PREFIX}MODE`];
  }
  return mode ? [mode, ...args] : args;
}

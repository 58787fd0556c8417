// The admin API under `/_sim` (plain JSON, outside the Kubernetes paths): request stats,
// fault injection by workload or pod, gates (pods held until released), write denials (an
// admission webhook's refusal), watch-history compaction, cluster info, chaos and the
// rate limit (chaos.ts), and the deletion audit log (audit.ts). Bad bodies get a 400 naming
// every problem and change nothing.
import type { DeletionAudit } from './audit';
import type { WriteDenials } from './denials';
import { parseChaosRule, parseRateLimit, TokenBucket, type TrafficControl } from './chaos';
import type { SimStats } from './stats';
import { FAULTS, type Fault } from './workloads/pod-status';

export interface AdminTarget {
  readonly stats: SimStats;
  readonly traffic: TrafficControl;
  readonly audit: DeletionAudit;
  readonly denials: WriteDenials;
  setFault(namespace: string, name: string, fault: Fault | undefined): { pods: string[] };
  listFaults(): { namespace: string; name: string; fault: Fault }[];
  holdImage(image: string): void;
  releaseImage(image: string): { released: boolean; pods: string[] };
  holdWorkload(namespace: string, name: string): void;
  releaseWorkload(namespace: string, name: string): { released: boolean; pods: string[] };
  gatesHeld(): { images: string[]; workloads: string[] };
  compact(opts: { dropWatches?: boolean }): void;
  info(): Record<string, unknown>;
}

type Answer = { status: number; body: unknown } | undefined;
const ok = (body: unknown) => ({ status: 200, body });
const bad = (errors: string[]) => ({ status: 400, body: { error: errors.join('; '), details: errors } });

function faults(sim: AdminTarget, method: string, b: Record<string, unknown>): Answer {
  if (method === 'GET') return ok({ faults: sim.listFaults() });
  if (method !== 'POST') return undefined;
  const fault = b.fault === null || b.fault === 'none' ? undefined : (b.fault as Fault);
  if (typeof b.namespace !== 'string' || typeof b.name !== 'string' || (fault !== undefined && !FAULTS.includes(fault))) {
    return { status: 400, body: { error: `body must be { namespace, name, fault: ${[...FAULTS, 'none'].join(' | ')} }` } };
  }
  const r = sim.setFault(b.namespace, b.name, fault);
  return ok({ namespace: b.namespace, name: b.name, fault: fault ?? 'none', pods: r.pods });
}

function gates(sim: AdminTarget, method: string, b: Record<string, unknown>): Answer {
  if (method === 'GET') return ok(sim.gatesHeld());
  if (method !== 'POST' && method !== 'DELETE') return undefined;
  const named = (k: string) => typeof b[k] === 'string' && b[k] !== '';
  if (named('image') === (named('namespace') || named('name')) || named('namespace') !== named('name')) {
    return bad(['body must be { image } (an image reference) or { namespace, name } (a workload)']);
  }
  const hold = method === 'POST';
  if (named('image')) {
    const image = b.image as string;
    return ok(hold ? (sim.holdImage(image), { image, held: true }) : { image, held: false, ...sim.releaseImage(image) });
  }
  const [ns, name] = [b.namespace as string, b.name as string];
  return ok(hold ? (sim.holdWorkload(ns, name), { namespace: ns, name, held: true }) : { namespace: ns, name, held: false, ...sim.releaseWorkload(ns, name) });
}

function denials(sim: AdminTarget, method: string, b: Record<string, unknown>): Answer {
  const d = sim.denials;
  if (method === 'GET') return ok({ denials: d.list() });
  if (method !== 'POST' && method !== 'DELETE') return undefined;
  const errors = ['namespace', 'name', ...(method === 'POST' ? ['reason'] : [])].filter((k) => typeof b[k] !== 'string' || b[k] === '').map((k) => `${k}: must be a non-empty string`);
  if (errors.length) return bad(errors);
  const [ns, name] = [b.namespace as string, b.name as string];
  if (method === 'POST') return ok((d.deny(ns, name, b.reason as string), { namespace: ns, name, denied: true }));
  return ok({ namespace: ns, name, denied: false, lifted: d.allow(ns, name) });
}

function chaos(sim: AdminTarget, method: string, b: Record<string, unknown>): Answer {
  const t = sim.traffic;
  if (method === 'GET') return ok({ rule: t.rule && t.rule.until > Date.now() ? t.rule : null, injected: t.injected });
  if (method === 'DELETE') {
    t.rule = undefined;
    return ok({ rule: null, injected: t.injected });
  }
  if (method !== 'POST') return undefined;
  const r = parseChaosRule(b, Date.now());
  if ('errors' in r) return bad(r.errors);
  t.rule = r.rule;
  return ok({ rule: r.rule });
}

function rateLimit(sim: AdminTarget, method: string, b: Record<string, unknown>): Answer {
  const t = sim.traffic;
  if (method === 'GET') return ok({ limit: t.bucket?.limit ?? null, rateLimited: t.injected.rateLimited });
  if (method === 'DELETE') {
    t.bucket = undefined;
    return ok({ limit: null });
  }
  if (method !== 'POST') return undefined;
  const r = parseRateLimit(b);
  if ('errors' in r) return bad(r.errors);
  t.bucket = new TokenBucket(r.limit, Date.now());
  return ok({ limit: r.limit });
}

export function adminRoute(sim: AdminTarget, method: string, path: string, body: unknown, query: URLSearchParams): Answer {
  const b = (body ?? {}) as Record<string, unknown>;
  switch (path) {
    case '/stats':
      return method === 'GET' ? ok(sim.stats.snapshot()) : undefined;
    case '/stats/reset':
      return method === 'POST' ? ok({ previous: sim.stats.reset() }) : undefined;
    case '/faults':
      return faults(sim, method, b);
    case '/gates':
      return gates(sim, method, b);
    case '/denials':
      return denials(sim, method, b);
    case '/compact':
      if (method !== 'POST') return undefined;
      sim.compact({ dropWatches: b.dropWatches === true });
      return ok({ resourceVersion: sim.info().resourceVersion });
    case '/info':
      return method === 'GET' ? ok(sim.info()) : undefined;
    case '/chaos':
      return chaos(sim, method, b);
    case '/ratelimit':
      return rateLimit(sim, method, b);
    case '/audit/deletions':
      if (method === 'GET') return ok(sim.audit.list(Number(query.get('since') ?? 0) || 0));
      if (method === 'DELETE') return ok({ removed: sim.audit.reset() });
      return undefined;
    case '/audit/deletions/reset':
      return method === 'POST' ? ok({ removed: sim.audit.reset() }) : undefined;
    default:
      return undefined;
  }
}

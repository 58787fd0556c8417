// The live events of GET /v1/events: the JSON contract the server publishes (src/store/events.ts,
// src/store/regions.ts) and its clients read (the CLI, the web view). In the kernel, so both
// sides share the one definition without the clients importing server modules: the types, and
// the one rule of which deployment an event concerns (the socket's ?deploymentId= filter).
export type LiveEvent =
  | { type: 'deployment.status'; deploymentId: string; environmentId: string; status: string; error: string | null }
  | { type: 'deployment.region'; deploymentId: string; region: string; wanted: number; running: number; failed: number; reason: string | null }
  | { type: 'sentinel.status'; sentinelId: string; region: string; deployStatus: string; health: string; runningImage: string | null }
  | { type: 'deployment.traffic'; environmentId: string; hostname: string; backends: { deploymentId: string; weight: number }[] }
  | {
      type: 'deployment.analysis';
      deploymentId: string;
      region: string | null;
      signal: string;
      verdict: 'pass' | 'fail' | 'inconclusive';
      value: number | null;
      reason: string | null;
      /** The gate's bounds, so a chart can draw them beside the values. */
      min?: number;
      max?: number;
      /** The compare judge's evidence (issue 27), one event per region per check. */
      judge?: 'threshold' | 'compare';
      method?: string;
      pValue?: number | null;
      shift?: { estimate: number; low: number; high: number } | null;
      baseline?: { deploymentId: string; n: number; median: number | null };
      canary?: { n: number; median: number | null };
      early?: boolean;
    }
  | { type: 'rollout.wave'; state: string; wave: number; waves: number; succeeded: number; failed: number }
  | { type: 'region.status'; region: string; status: 'online' | 'offline' | 'never_seen'; lastSeenAt: string | null };

/**
 * Whether `e` is about deployment `id`: its own events, and a traffic change that names it among
 * the backends (a canary's weight moves without an event carrying its id).
 */
export function eventConcerns(e: LiveEvent, id: string): boolean {
  if ('deploymentId' in e) return e.deploymentId === id;
  return e.type === 'deployment.traffic' && e.backends.some((b) => b.deploymentId === id);
}

// The live events of GET /v1/events: the JSON contract the server publishes (src/store/events.ts,
// src/store/regions.ts) and its clients read (the CLI, the web view). Types only, in the kernel,
// so both sides share the one definition without the clients importing server modules.
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
    }
  | { type: 'rollout.wave'; state: string; wave: number; waves: number; succeeded: number; failed: number }
  | { type: 'region.status'; region: string; status: 'online' | 'offline' | 'never_seen'; lastSeenAt: string | null };

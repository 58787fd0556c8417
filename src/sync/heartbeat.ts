// krane's heartbeat sender: POST /v1/cluster/heartbeat every interval and soon after each newly
// committed feed cursor, so ctrl knows the agent is alive and how far it has applied. A beat
// is fire-and-forget: a failed one is logged and the next one carries fresher data anyway, so
// there is no retry queue. At most one request is in flight; changes seen meanwhile are sent
// by the next beat.
import { randomBytes } from 'node:crypto';
import { hostname } from 'node:os';
import type { Logger } from '../log';
import { HEARTBEAT_INTERVAL_MS, type Heartbeat } from './liveness';

/** Reported as the agent's version; tests/sync/liveness.test.ts keeps it equal to package.json. */
export const KRANE_VERSION = '0.1.0';

/** How often the committed cursor is compared with the last one sent: cheap (a field read),
 *  and short enough that ctrl's lag drops within a fraction of a second of an apply. */
const CURSOR_POLL_MS = 250;
/** A beat that takes longer than this is abandoned; the next one replaces it. */
const REQUEST_TIMEOUT_MS = 5_000;

export interface HeartbeatSource {
  /** The committed cursor (undefined before the first full sync). */
  cursor(): string | undefined;
  /** Complete full syncs so far; an increase dates lastFullSyncAt. */
  fullSyncs(): number;
  /** Managed objects by kind. */
  objects(): Record<string, number>;
  /** Whether this replica leads (always true without leader election). */
  leader(): boolean;
  /** Objects put back by drift repair since this krane started (src/kube/repair.ts). */
  drift?(): { repaired: number; byKind: Record<string, number>; lastAt?: string; lastObject?: string };
}

export interface HeartbeatSenderOptions {
  controlPlaneUrl: string;
  token: string;
  region: string;
  source: HeartbeatSource;
  logger: Logger;
  intervalMs?: number;
  /** Defaults to the host name (the pod name in Kubernetes) with a random suffix. */
  agentId?: string;
}

export const defaultAgentId = () => `${hostname()}-${randomBytes(3).toString('hex')}`;

export class HeartbeatSender {
  readonly agentId: string;
  /** Beats sent and failed since start (for tests and /metrics). */
  readonly stats = { sent: 0, failed: 0 };
  private sentCursor: string | undefined;
  private sentLeader: boolean | undefined;
  private fullSyncs = 0;
  private lastFullSyncAt: Date | undefined;
  private inFlight: Promise<void> | undefined;
  private timers: NodeJS.Timeout[] = [];
  private stopped = false;

  constructor(private readonly o: HeartbeatSenderOptions) {
    this.agentId = o.agentId ?? defaultAgentId();
  }

  start(): void {
    void this.beat();
    const every = this.o.intervalMs ?? HEARTBEAT_INTERVAL_MS;
    this.timers.push(setInterval(() => void this.beat(), every));
    this.timers.push(
      setInterval(() => {
        const s = this.o.source;
        if (s.cursor() !== this.sentCursor || s.leader() !== this.sentLeader) void this.beat();
      }, Math.min(CURSOR_POLL_MS, every)),
    );
    for (const t of this.timers) t.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers) clearInterval(t);
    await this.inFlight;
  }

  /** Sends one beat now unless one is in flight. */
  beat(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    this.inFlight ??= this.send().finally(() => (this.inFlight = undefined));
    return this.inFlight;
  }

  private body(): Heartbeat {
    const s = this.o.source;
    const syncs = s.fullSyncs();
    if (syncs > this.fullSyncs) {
      this.fullSyncs = syncs;
      this.lastFullSyncAt = new Date();
    }
    const cursor = s.cursor();
    return {
      region: this.o.region,
      agentId: this.agentId,
      version: KRANE_VERSION,
      leader: s.leader(),
      ...(cursor ? { cursor } : {}),
      objects: s.objects(),
      ...(s.drift ? { drift: s.drift() } : {}),
      ...(this.lastFullSyncAt ? { lastFullSyncAt: this.lastFullSyncAt.toISOString() } : {}),
    };
  }

  private async send(): Promise<void> {
    const body = this.body();
    // Marked sent before the request: a failed beat is not retried on every cursor poll while
    // ctrl is away; the next interval beat carries the newest cursor anyway.
    this.sentCursor = body.cursor;
    this.sentLeader = body.leader;
    try {
      const res = await fetch(new URL('/v1/cluster/heartbeat', this.o.controlPlaneUrl), {
        method: 'POST',
        headers: { authorization: `Bearer ${this.o.token}`, 'content-type': 'application/json' },
        body: JSON.stringify(body),
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
      });
      await res.text();
      if (!res.ok) throw new Error(`ctrl answered ${res.status}`);
      this.stats.sent++;
    } catch (err) {
      this.stats.failed++;
      this.o.logger.warn({ err: (err as Error).message, region: this.o.region }, 'heartbeat failed');
    }
  }
}

/** Counts of objects by kind from watch caches (krane's drift reflectors), for `objects`. */
export function objectCounts(caches: Record<string, { store: Map<string, unknown> }>): () => Record<string, number> {
  return () => Object.fromEntries(Object.entries(caches).map(([k, c]) => [k, c.store.size]));
}

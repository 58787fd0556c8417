// The embedded stack's kranes, supervised as a cluster supervises pods. krane shuts down when
// it loses its Lease, and in a cluster its pod's restart policy starts it again (src/main.ts
// exits). In `dev` and the tests nothing did: one pause of the process past the renew deadline
// (a laptop asleep, a stalled machine) left the region without an agent for good, and every
// deploy to it waited out its timeout.
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../log';
import type { KraneHandle } from './krane';

/** A krane that lost its Lease is started again after this, doubling per failed start up to the max. */
const RELAUNCH_MS = 200;
const RELAUNCH_MAX_MS = 5_000;

export interface SupervisorOptions {
  /** Starts a region's krane, which calls onLostLease once it shut down after losing its Lease. */
  start(region: string, onLostLease: () => void): Promise<KraneHandle>;
  /** The krane now running for the region (the stack's handle shows it). */
  replaced(region: string, krane: KraneHandle): void;
  logger: Logger;
}

export class KraneSupervisor {
  readonly #closed = new AbortController();
  /** Regions whose krane was stopped on purpose: not started again until resumed. */
  readonly #stopped = new Set<string>();
  readonly #relaunching = new Map<string, Promise<void>>();

  constructor(private readonly o: SupervisorOptions) {}

  start(region: string): Promise<KraneHandle> {
    return this.o.start(region, () => this.#lost(region));
  }

  /** True when the region's krane was stopped on purpose (stop()). */
  stopped(region: string): boolean {
    return this.#stopped.has(region);
  }

  /** From now on the region's krane stays down, whatever ends it. */
  stop(region: string): void {
    this.#stopped.add(region);
  }

  /** Waits for a start again in progress, then lets the region's krane be supervised again. */
  async resume(region: string): Promise<void> {
    await this.#relaunching.get(region);
    this.#stopped.delete(region);
  }

  /** Starts nothing more, and waits for starts again in progress (each closes what it started). */
  async close(): Promise<void> {
    this.#closed.abort();
    await Promise.all(this.#relaunching.values());
  }

  #lost(region: string): void {
    if (this.#relaunching.has(region)) return;
    this.#relaunching.set(region, this.#relaunch(region).finally(() => this.#relaunching.delete(region)));
  }

  #down(region: string): boolean {
    return this.#closed.signal.aborted || this.#stopped.has(region);
  }

  async #relaunch(region: string): Promise<void> {
    for (let attempt = 0; !this.#down(region); attempt++) {
      await sleep(Math.min(RELAUNCH_MAX_MS, RELAUNCH_MS * 2 ** attempt), undefined, { signal: this.#closed.signal }).catch(() => {});
      if (this.#down(region)) return;
      try {
        const krane = await this.start(region);
        // Stopped or closed while it started: it must not outlive the stack.
        if (this.#down(region)) return void (await krane.close());
        this.o.replaced(region, krane);
        this.o.logger.warn({ region, attempt }, 'krane lost its Lease and was started again');
        return;
      } catch (err) {
        this.o.logger.warn({ region, err: (err as Error).message }, 'krane could not be started again, retrying');
      }
    }
  }
}

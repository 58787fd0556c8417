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
  /** Per region, aborted when its krane is stopped on purpose: not started again until resumed. */
  readonly #stops = new Map<string, AbortController>();
  readonly #relaunching = new Map<string, Promise<void>>();
  /** Starts in progress, so close() can wait for them and close what they produce. */
  readonly #starting = new Set<Promise<unknown>>();

  constructor(private readonly o: SupervisorOptions) {}

  /** Starts a region's krane under supervision; refused once the supervisor is closed. */
  async start(region: string): Promise<KraneHandle> {
    if (this.#closed.signal.aborted) throw new Error('the stack is closing');
    const p = this.o.start(region, () => this.#lost(region));
    this.#starting.add(p);
    try {
      const krane = await p;
      // Closed while it started: it must not outlive the stack.
      if (this.#closed.signal.aborted) {
        await krane.close();
        throw new Error('the stack is closing');
      }
      return krane;
    } finally {
      this.#starting.delete(p);
    }
  }

  /** True when the region's krane was stopped on purpose (stop()). */
  stopped(region: string): boolean {
    return this.#stops.get(region)?.signal.aborted ?? false;
  }

  /** From now on the region's krane stays down, whatever ends it; ends a restart's backoff. */
  stop(region: string): void {
    this.#control(region).abort();
  }

  /** Waits until no restart of the region is in progress (one that was stopped closes its krane). */
  async settled(region: string): Promise<void> {
    await this.#relaunching.get(region);
  }

  /** Lets a stopped region's krane be supervised again. */
  resume(region: string): void {
    if (this.stopped(region)) this.#stops.set(region, new AbortController());
  }

  /** Starts nothing more, and waits for starts in progress (each closes what it started). */
  async close(): Promise<void> {
    this.#closed.abort();
    await Promise.allSettled([...this.#relaunching.values(), ...this.#starting]);
  }

  #control(region: string): AbortController {
    let c = this.#stops.get(region);
    if (!c) this.#stops.set(region, (c = new AbortController()));
    return c;
  }

  #lost(region: string): void {
    if (this.#relaunching.has(region)) return;
    this.#relaunching.set(region, this.#relaunch(region).finally(() => this.#relaunching.delete(region)));
  }

  #down(region: string): boolean {
    return this.#closed.signal.aborted || this.stopped(region);
  }

  async #relaunch(region: string): Promise<void> {
    const signal = AbortSignal.any([this.#closed.signal, this.#control(region).signal]);
    for (let attempt = 0; !this.#down(region); attempt++) {
      await sleep(Math.min(RELAUNCH_MAX_MS, RELAUNCH_MS * 2 ** attempt), undefined, { signal }).catch(() => {});
      if (this.#down(region)) return;
      try {
        const krane = await this.start(region);
        // Stopped while it started: stop() means down.
        if (this.#down(region)) return void (await krane.close());
        this.o.replaced(region, krane);
        this.o.logger.warn({ region, attempt }, 'krane lost its Lease and was started again');
        return;
      } catch (err) {
        if (this.#down(region)) return;
        this.o.logger.warn({ region, err: (err as Error).message }, 'krane could not be started again, retrying');
      }
    }
  }
}

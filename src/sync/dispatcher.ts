// krane's dispatch of feed events to the ResourceController. Events of one resource run one
// at a time, in arrival order; different resources run concurrently up to `concurrency`.
// Events are level-triggered, so while one is running only the newest waiting state of that
// resource is kept: an event overtaken before it started completes together with the one that
// replaced it (its state is older, and the newer one covers it).
//
// A PermanentError (the cluster rejected the object) is reported through onPermanentFailure
// and counts as handled; any other error is retried a few times in place, then the submit
// rejects and the watcher holds its cursor before that event. A RetryLaterError's retryAfterMs
// (a 429's Retry-After) is the least wait before the next try.
//
// An event carrying a traceparent (ctrl traced the write behind it) is handled inside the span
// <kind>.apply.<region> (deployment.apply.us-east-1), a child of that write, so the agent's
// work shows in the deployment's trace; the controller's reports read it as their context.
import type { Logger } from '../log';
import { failActiveSpan, withSpan } from '../tracing';
import { PermanentError, RetryLaterError, type ResourceController } from './wire';
import { refKey, type DesiredState, type ResourceRef } from './wire';

export interface DispatcherOptions {
  controller: ResourceController;
  concurrency: number;
  logger: Logger;
  /** `state`: what was refused, so a reporter can tell a new refusal from the same one again. */
  onPermanentFailure?: (ref: ResourceRef, err: PermanentError, state: DesiredState) => void | Promise<void>;
  /** In-place retries of a transient failure before the event is given up on. */
  retries: number;
  retryDelayMs: number;
  /** How a wait between tries happens (tests record the waits instead of timing them). */
  sleep?: (ms: number) => Promise<void>;
}

/** Seed 001 names the deployment's apply span deployment.apply.<region>; the others follow suit. */
const SPAN_PREFIX: Record<ResourceRef['type'], string> = { deployment_topology: 'deployment', sentinel: 'sentinel', cilium_network_policy: 'cilium', environment_routes: 'routes' };

const defaultSleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

interface Waiter {
  resolve: () => void;
  reject: (err: unknown) => void;
}

interface Slot {
  running: boolean;
  next?: { ref: ResourceRef; state: DesiredState; traceparent: string | undefined; waiters: Waiter[] };
}

export class Dispatcher {
  private readonly slots = new Map<string, Slot>();
  private active = 0;
  private readonly queue: (() => void)[] = [];
  private pendingCount = 0;
  private roomWaiters: (() => void)[] = [];
  private stopped = false;

  constructor(private readonly opts: DispatcherOptions) {}

  /** Events submitted and not yet finished. */
  get backlog() {
    return this.pendingCount;
  }

  /** Resolves once the event (or a newer one of the same resource that replaced it) is handled. */
  submit(ref: ResourceRef, state: DesiredState, traceparent?: string): Promise<void> {
    const key = refKey(ref);
    let slot = this.slots.get(key);
    if (!slot) this.slots.set(key, (slot = { running: false }));
    this.pendingCount++;
    const p = new Promise<void>((resolve, reject) => {
      if (slot.next) {
        slot.next.ref = ref;
        slot.next.state = state;
        slot.next.traceparent = traceparent;
        slot.next.waiters.push({ resolve, reject });
      } else slot.next = { ref, state, traceparent, waiters: [{ resolve, reject }] };
    });
    if (!slot.running) void this.pump(key, slot);
    return p;
  }

  /** Waits until the backlog is below `max`, so a huge snapshot does not pile up in memory. */
  async waitForRoom(max: number): Promise<void> {
    while (this.pendingCount >= max) await new Promise<void>((r) => this.roomWaiters.push(r));
  }

  /** Resolves when nothing is running or waiting. */
  async drain(): Promise<void> {
    await this.waitForRoom(1);
  }

  stop(): void {
    this.stopped = true;
  }

  private async pump(key: string, slot: Slot): Promise<void> {
    slot.running = true;
    while (slot.next) {
      const job = slot.next;
      slot.next = undefined;
      await this.acquire();
      let err: unknown;
      try {
        await this.traced(job.ref, job.state, job.traceparent);
      } catch (e) {
        err = e;
      } finally {
        this.release();
      }
      for (const w of job.waiters) (err === undefined ? w.resolve() : w.reject(err));
      this.pendingCount -= job.waiters.length;
      if (this.pendingCount < 1 || this.roomWaiters.length) {
        const ws = this.roomWaiters;
        this.roomWaiters = [];
        for (const w of ws) w();
      }
    }
    slot.running = false;
    this.slots.delete(key);
  }

  private traced(ref: ResourceRef, state: DesiredState, traceparent: string | undefined): Promise<void> {
    if (!traceparent) return this.handle(ref, state);
    const attributes = { region: ref.region, 'resource.type': ref.type, 'resource.id': ref.id, action: state.action };
    return withSpan(`${SPAN_PREFIX[ref.type]}.apply.${ref.region}`, { parent: traceparent, attributes }, () => this.handle(ref, state));
  }

  private async handle(ref: ResourceRef, state: DesiredState): Promise<void> {
    const { controller, logger } = this.opts;
    for (let attempt = 0; ; attempt++) {
      try {
        if (state.action === 'apply') await controller.apply(ref, state);
        else await controller.delete(ref);
        logger.debug({ resource: ref, action: state.action }, 'resource handled');
        return;
      } catch (err) {
        if (err instanceof PermanentError) {
          logger.warn({ err, resource: ref }, 'resource rejected permanently');
          failActiveSpan(err);
          await this.opts.onPermanentFailure?.(ref, err, state);
          return;
        }
        if (attempt >= this.opts.retries || this.stopped) throw err;
        const waitMs = Math.max(this.opts.retryDelayMs * (attempt + 1), err instanceof RetryLaterError ? (err.retryAfterMs ?? 0) : 0);
        logger.warn({ err, resource: ref, attempt, waitMs }, 'resource handler failed, retrying');
        await (this.opts.sleep ?? defaultSleep)(waitMs);
      }
    }
  }

  private acquire(): Promise<void> {
    if (this.active < this.opts.concurrency) {
      this.active++;
      return Promise.resolve();
    }
    return new Promise((r) => this.queue.push(r));
  }

  private release(): void {
    const next = this.queue.shift();
    if (next) next();
    else this.active--;
  }
}

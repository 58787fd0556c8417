// Leader election among krane replicas of one cluster through a coordination.k8s.io/v1 Lease
// (`krane-<region>` in namespace `unkey`), the way client-go's leaderelection does it: the
// holder renews every retry period; a candidate takes the Lease once the record it last saw has
// not changed for a whole lease duration. Expiry is judged by when this process last saw the
// record change (its own clock), never by comparing clocks across machines. Writes carry the
// resourceVersion they read, so of two candidates racing only one wins (the other gets 409).
// A leader that cannot renew within the renew deadline steps down before others may take over.
// `epoch` is the Lease's leaseTransitions this replica wrote when it took the lead: every replica
// agrees on it, and each takeover raises it, so krane orders its reports by it (and a counter of
// its own) instead of by wall clocks of different processes. Deleting the Lease by hand starts it
// at 0 again: ctrl then ignores the new leader's sentinel reports until they pass the old count.
import { CoordinationV1Api, CoreV1Api, type KubeConfig, type V1Lease } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../log';
import { httpStatus, timedConfiguration } from './client';

export const LEASE_NAMESPACE = 'unkey';
export const leaseName = (region: string) => `krane-${region}`;

/**
 * 10 s lease, renewed every 2 s, given up after 7 s without a renewal: a dead leader is
 * replaced within lease + retry = 12 s (the issue asks for 15 s), and a live one stops
 * applying (renew deadline) before anyone else may start.
 */
export const DEFAULT_LEASE_MS = 10_000;
export const DEFAULT_RETRY_MS = 2_000;
export const DEFAULT_RENEW_DEADLINE_MS = 7_000;

export interface LeaderElectorOptions {
  kubeConfig: KubeConfig;
  region: string;
  identity: string;
  logger: Logger;
  leaseMs?: number;
  retryMs?: number;
  renewDeadlineMs?: number;
  onStartedLeading(): void | Promise<void>;
  onStoppedLeading(): void | Promise<void>;
}

export class LeaderElector {
  private readonly api: CoordinationV1Api;
  private readonly core: CoreV1Api;
  private readonly leaseMs: number;
  private readonly retryMs: number;
  private readonly renewDeadlineMs: number;
  private leading = false;
  private leaseEpoch: number | undefined;
  private observed: { key: string; at: number } | undefined;
  private stopped = false;
  private loop: Promise<void> | undefined;
  private readonly wake = new AbortController();
  private deadline: NodeJS.Timeout | undefined;

  constructor(private readonly o: LeaderElectorOptions) {
    this.leaseMs = o.leaseMs ?? DEFAULT_LEASE_MS;
    this.retryMs = o.retryMs ?? DEFAULT_RETRY_MS;
    this.renewDeadlineMs = o.renewDeadlineMs ?? DEFAULT_RENEW_DEADLINE_MS;
    // A round is given up at the renew deadline (withTimeout); its request is aborted then too,
    // or every round on a silent link would leave a socket waiting.
    const config = timedConfiguration(o.kubeConfig, this.renewDeadlineMs);
    this.api = new CoordinationV1Api(config);
    this.core = new CoreV1Api(config);
  }

  get isLeader(): boolean {
    return this.leading;
  }

  /** leaseTransitions as this replica last wrote the Lease (taking or renewing it); undefined before. */
  get epoch(): number | undefined {
    return this.leaseEpoch;
  }

  start(): void {
    this.loop ??= this.run();
  }

  /** Stops campaigning; a leader steps down and releases the Lease so a standby takes over at once. */
  async stop(): Promise<void> {
    this.stopped = true;
    this.wake.abort();
    await this.loop;
    clearTimeout(this.deadline);
    if (this.leading) await this.setLeading(false);
    // Released even when the deadline already stepped this replica down: a renewal that landed
    // late may still name it, and the standby would otherwise wait out a whole lease.
    // (release() checks the holder.)
    await withTimeout(this.release(), this.renewDeadlineMs).catch((err) => this.o.logger.warn({ err: (err as Error).message }, 'could not release lease'));
  }

  /** Stops campaigning without stepping down or releasing: what a crash looks like to the others. */
  async abandon(): Promise<void> {
    this.stopped = true;
    this.wake.abort();
    await this.loop;
  }

  private async run(): Promise<void> {
    while (!this.stopped) {
      let ok = false;
      // The Lease is written somewhere after this instant: leadership is counted from it, not
      // from when the answer arrives, since a standby counts from the write it observes.
      const t0 = Date.now();
      try {
        // A round that does not come back (a half-open link to the API server: client-node sets
        // no timeout) is given up on, so the loop keeps trying and stop() never hangs on it.
        ok = await withTimeout(this.tryAcquireOrRenew(), this.renewDeadlineMs);
      } catch (err) {
        this.o.logger.warn({ err: (err as Error).message, status: httpStatus(err) }, 'lease request failed');
      }
      const left = this.renewDeadlineMs - (Date.now() - t0);
      if (ok && !this.stopped && left > 0) {
        this.armDeadline(left);
        if (!this.leading) await this.setLeading(true);
      }
      await sleep(this.retryMs, undefined, { signal: this.wake.signal }).catch(() => {});
    }
    clearTimeout(this.deadline);
  }

  /**
   * Steps down renewDeadlineMs after the last renewal, on a timer of its own: a check after each
   * round would wait for that round, and a request can hang far longer than the lease lasts,
   * while a standby takes over after leaseMs.
   */
  private armDeadline(ms: number): void {
    clearTimeout(this.deadline);
    this.deadline = setTimeout(() => {
      if (this.leading && !this.stopped) void this.setLeading(false);
    }, ms);
  }

  private async setLeading(v: boolean): Promise<void> {
    if (this.leading === v) return;
    this.leading = v;
    this.o.logger.info({ identity: this.o.identity, region: this.o.region }, v ? 'became leader' : 'stopped leading');
    try {
      await (v ? this.o.onStartedLeading() : this.o.onStoppedLeading());
    } catch (err) {
      this.o.logger.error({ err }, 'leadership callback failed');
    }
  }

  private spec(now: Date, acquire: boolean, prev?: V1Lease) {
    return {
      holderIdentity: this.o.identity,
      leaseDurationSeconds: Math.ceil(this.leaseMs / 1000),
      acquireTime: acquire ? now : prev?.spec?.acquireTime ?? now,
      renewTime: now,
      leaseTransitions: (prev?.spec?.leaseTransitions ?? 0) + (acquire && prev ? 1 : 0),
    };
  }

  /** One round: true when this replica holds the Lease afterwards. */
  private async tryAcquireOrRenew(): Promise<boolean> {
    const name = leaseName(this.o.region);
    const now = new Date();
    let lease: V1Lease;
    try {
      lease = await this.api.readNamespacedLease({ name, namespace: LEASE_NAMESPACE });
    } catch (err) {
      if (httpStatus(err) !== 404) throw err;
      try {
        await this.createLease(name, now);
      } catch (e) {
        // Another replica created it first (both started at once): a lost race, not a failure.
        if (httpStatus(e) === 409) {
          this.o.logger.debug({ identity: this.o.identity }, 'lease created by another replica first');
          return false;
        }
        throw e;
      }
      this.leaseEpoch = 0;
      return true;
    }
    const holder = lease.spec?.holderIdentity ?? '';
    const key = `${holder}|${String(lease.spec?.renewTime ?? '')}|${lease.metadata?.resourceVersion ?? ''}`;
    if (this.observed?.key !== key) this.observed = { key, at: Date.now() };
    const mine = holder === this.o.identity;
    const durationMs = (lease.spec?.leaseDurationSeconds ?? this.leaseMs / 1000) * 1000;
    const expired = !holder || Date.now() - this.observed.at > durationMs;
    if (!mine && !expired) return false;
    try {
      const spec = this.spec(now, !mine, lease);
      await this.api.replaceNamespacedLease({ name, namespace: LEASE_NAMESPACE, body: { ...lease, spec } });
      this.leaseEpoch = spec.leaseTransitions;
      return true;
    } catch (err) {
      if (httpStatus(err) === 409) return false;
      throw err;
    }
  }

  private async release(): Promise<void> {
    const name = leaseName(this.o.region);
    let lease: V1Lease;
    try {
      lease = await this.api.readNamespacedLease({ name, namespace: LEASE_NAMESPACE });
    } catch (err) {
      if (httpStatus(err) === 404) return;
      throw err;
    }
    if (lease.spec?.holderIdentity !== this.o.identity) return;
    await this.api.replaceNamespacedLease({ name, namespace: LEASE_NAMESPACE, body: { ...lease, spec: { ...lease.spec, holderIdentity: '', leaseDurationSeconds: 1 } } });
  }

  /**
   * Creates the Lease; only when its namespace is missing (a bare simulator) does it try to
   * create namespace `unkey` first. Never before: krane's grant (deploy/krane-rbac.yaml) has no
   * cluster-scoped verbs, and RBAC refuses a namespace create with 403 even when it exists.
   */
  private async createLease(name: string, now: Date): Promise<void> {
    const create = () => this.api.createNamespacedLease({ namespace: LEASE_NAMESPACE, body: { metadata: { name, namespace: LEASE_NAMESPACE }, spec: this.spec(now, true) } });
    try {
      await create();
    } catch (err) {
      if (httpStatus(err) !== 404) throw err;
      await this.core.createNamespace({ body: { metadata: { name: LEASE_NAMESPACE } } }).catch((e: unknown) => {
        if (httpStatus(e) !== 409) throw e;
      });
      await create();
    }
  }
}

/** `p`, or a rejection once `ms` have passed (p itself is left to settle on its own). */
function withTimeout<T>(p: Promise<T>, ms: number): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    t = setTimeout(() => reject(new Error(`lease request took longer than ${ms} ms`)), ms);
  });
  p.catch(() => {}); // a round given up on may still fail later; nobody is waiting for it
  return Promise.race([p, late]).finally(() => clearTimeout(t));
}

// The status reporter: krane → ctrl. Observers hand it states; it keeps only the latest state
// per key (pod, sentinel, resource's apply outcome, the region's GC brake) in a buffer, sends
// batches to POST /v1/cluster/{deployments,sentinels,region}/status with p-retry, behind an opossum circuit
// breaker, and removes a state from the buffer only once ctrl accepted it (and only if no newer
// state for the same resource arrived meanwhile). With ctrl down the buffer holds one entry per
// resource, so it stays bounded by the cluster's size, and everything is delivered when ctrl
// returns. The one case that discards a state is ctrl refusing it permanently (4xx other than
// 401/408/429): the batch is bisected so only the refused states go, and each is logged at error
// level and counted in krane_status_reports_dropped_total — never silently.
//
// Sentinel states carry their order, { leaseEpoch, seq }: the Lease's transitions when this krane
// took the lead (lead()) and a counter of this leader's, stamped when observed; ctrl keeps the
// greatest, so a late report of an earlier observation, or of a leader that lost its Lease,
// never overwrites a newer one. Without leader election (no lead()) they carry none and are
// applied as they come. observedAt, the wall clock, is for display only.
//
// Order: an apply failure and the success that clears it share one key, so the buffer holds
// only the latest outcome per resource, and a batch lists states in the order they were
// observed; ctrl applies them in that order (src/http/cluster-status.ts). The complete set of
// the region's pods (after a full list) is one more key: a body carries it with the instance
// states around it, and ctrl prunes by it before applying them, so a state observed after the
// list is never undone by it; states after it that do not fit the batch go in the next body.
import CircuitBreaker from 'opossum';
import pRetry from 'p-retry';
import client from 'prom-client';
import type { Logger } from '../log';
import type { StatusSink } from './wire';
import { refKey, type ApplyReport, type AutoscalerStatus, type GcStatus, type InstanceRef, type InstanceReport, type SentinelStatus } from './wire';

export interface ReporterOptions {
  controlPlaneUrl: string;
  token: string;
  region: string;
  logger: Logger;
  registry?: client.Registry;
  /** Wait after the first new state before sending, so a burst goes out as one batch. */
  flushDelayMs?: number;
  /** After a failed send, wait this long before trying again. */
  retryIntervalMs?: number;
  maxBatch?: number;
  /** p-retry attempts per send (after the first). */
  retries?: number;
  minRetryMs?: number;
  maxRetryMs?: number;
  /** One HTTP request's time limit. */
  requestTimeoutMs?: number;
  /** Longest close() waits for a last delivery. */
  closeTimeoutMs?: number;
  breaker?: { resetTimeoutMs?: number; errorThresholdPercentage?: number; volumeThreshold?: number };
}

/** Defaults. A crash-looping pod must reach ctrl within ~2 s: 100 ms batching keeps that easy. */
const DEFAULTS = {
  flushDelayMs: 100,
  retryIntervalMs: 1000,
  // Keeps one request body well under ctrl's 4 MiB body limit even with long reasons.
  maxBatch: 500,
  retries: 2,
  minRetryMs: 100,
  maxRetryMs: 1000,
  requestTimeoutMs: 10_000,
  // Kubernetes gives a pod 30 s after SIGTERM; leave room for the rest of shutdown.
  closeTimeoutMs: 5000,
  // After opening, probe ctrl again every 5 s: quick recovery without hammering a sick ctrl.
  resetTimeoutMs: 5000,
  errorThresholdPercentage: 50,
  volumeThreshold: 3,
};

type Channel = 'deployments' | 'sentinels' | 'region';
const CHANNELS: readonly Channel[] = ['deployments', 'sentinels', 'region'];
type Item =
  | { kind: 'instance'; key: string; value: InstanceReport }
  | { kind: 'instanceSet'; key: string; value: InstanceRef[] }
  | { kind: 'sentinel'; key: string; value: SentinelStatus }
  | { kind: 'apply'; key: string; value: ApplyReport }
  | { kind: 'gc'; key: string; value: GcStatus }
  | { kind: 'autoscaler'; key: string; value: AutoscalerStatus };
interface Slot {
  seq: number;
  item: Item;
}

/** ctrl refused the batch for a reason retrying cannot fix. */
class RejectedError extends Error {
  constructor(readonly status: number, readonly body: string) {
    super(`ctrl rejected status report with ${status}`);
  }
}

const isRejected = (err: unknown): err is RejectedError => err instanceof RejectedError;

export class StatusReporter implements StatusSink {
  private readonly o: Required<Omit<ReporterOptions, 'registry' | 'breaker'>> & { breaker: Required<NonNullable<ReporterOptions['breaker']>> };
  private readonly buffers: Record<Channel, Map<string, Slot>> = { deployments: new Map(), sentinels: new Map(), region: new Map() };
  private readonly timers: Partial<Record<Channel, NodeJS.Timeout>> = {};
  private readonly inFlight: Partial<Record<Channel, Promise<void>>> = {};
  private readonly lastSendFailed: Record<Channel, boolean> = { deployments: false, sentinels: false, region: false };
  private seq = 0;
  private closed = false;
  readonly breaker: CircuitBreaker<[Channel, unknown], void>;
  private readonly metrics: { buffered: client.Gauge; sent: client.Counter; dropped: client.Counter; failed: client.Counter } | undefined;

  constructor(opts: ReporterOptions) {
    // Options left undefined keep their default (a plain spread would overwrite it).
    const given = Object.fromEntries(Object.entries(opts).filter(([, v]) => v !== undefined)) as unknown as ReporterOptions;
    this.o = {
      ...DEFAULTS,
      ...given,
      breaker: {
        resetTimeoutMs: opts.breaker?.resetTimeoutMs ?? DEFAULTS.resetTimeoutMs,
        errorThresholdPercentage: opts.breaker?.errorThresholdPercentage ?? DEFAULTS.errorThresholdPercentage,
        volumeThreshold: opts.breaker?.volumeThreshold ?? DEFAULTS.volumeThreshold,
      },
    } as typeof this.o;
    this.breaker = new CircuitBreaker((channel: Channel, body: unknown) => this.postWithRetry(channel, body), {
      // p-retry and the request timeout bound each call; the breaker's own timeout would race them.
      timeout: false,
      resetTimeout: this.o.breaker.resetTimeoutMs,
      errorThresholdPercentage: this.o.breaker.errorThresholdPercentage,
      volumeThreshold: this.o.breaker.volumeThreshold,
      // A refused report says ctrl is up and answering: not a reason to open the circuit.
      errorFilter: (err: unknown) => isRejected(err),
    });
    this.breaker.on('open', () => this.o.logger.warn({ resetTimeoutMs: this.o.breaker.resetTimeoutMs }, 'status reporter circuit open'));
    this.breaker.on('close', () => {
      this.o.logger.info('status reporter circuit closed');
      for (const ch of CHANNELS) if (this.buffers[ch].size) this.schedule(ch, 0);
    });
    if (opts.registry) {
      const registers = [opts.registry];
      const reporter = this;
      this.metrics = {
        buffered: new client.Gauge({
          name: 'krane_status_buffered',
          help: 'States waiting to be delivered to ctrl',
          registers,
          collect() {
            this.set(reporter.pending());
          },
        }),
        sent: new client.Counter({ name: 'krane_status_reports_sent_total', help: 'States ctrl accepted', registers }),
        dropped: new client.Counter({ name: 'krane_status_reports_dropped_total', help: 'States ctrl refused permanently (logged)', registers }),
        failed: new client.Counter({ name: 'krane_status_send_failures_total', help: 'Batches that could not be delivered yet', registers }),
      };
      new client.Gauge({
        name: 'krane_status_circuit_open',
        help: '1 while the circuit to ctrl is open (reports are held, not sent)',
        registers,
        collect() {
          this.set(reporter.breaker.opened ? 1 : 0);
        },
      });
    }
  }

  instance(r: InstanceReport): void {
    this.put('deployments', { kind: 'instance', key: `instance/${r.deploymentId}/${r.podName}`, value: r });
  }

  instanceSet(pods: InstanceRef[]): void {
    this.put('deployments', { kind: 'instanceSet', key: 'instance-set', value: pods });
  }

  autoscaler(s: AutoscalerStatus): void {
    this.put('deployments', { kind: 'autoscaler', key: `autoscaler/${s.deploymentId}`, value: s });
  }

  sentinel(s: SentinelStatus): void {
    const order = this.epoch === undefined ? {} : { leaseEpoch: this.epoch, seq: ++this.sentinelSeq };
    this.put('sentinels', { kind: 'sentinel', key: `sentinel/${s.sentinelId}`, value: { ...s, ...order, observedAt: Date.now() } });
  }

  /** The Lease's transitions of this krane's leadership (LeaderElector#epoch). */
  private epoch: number | undefined;
  /** This leader's counter of sentinel observations: the `seq` of their order. */
  private sentinelSeq = 0;

  /**
   * This krane leads from now on, under the Lease's `epoch`: its sentinel states are ordered by
   * { epoch, seq } with seq counted from 0 for this leadership.
   */
  lead(epoch: number): void {
    this.epoch = epoch;
    this.sentinelSeq = 0;
  }

  apply(r: ApplyReport): void {
    const channel: Channel = r.resource.type === 'deployment_topology' ? 'deployments' : 'sentinels';
    // One key for a resource's failure and the success that clears it: only the latest counts.
    this.put(channel, { kind: 'apply', key: `apply/${refKey(r.resource)}`, value: r });
  }

  gc(s: GcStatus): void {
    this.put('region', { kind: 'gc', key: 'gc', value: s });
  }

  /** States not yet accepted by ctrl. */
  pending(): number {
    return this.buffers.deployments.size + this.buffers.sentinels.size + this.buffers.region.size;
  }

  breakerState(): 'closed' | 'open' | 'halfOpen' {
    return this.breaker.opened ? 'open' : this.breaker.halfOpen ? 'halfOpen' : 'closed';
  }

  /** Sends everything buffered now; resolves when every channel tried once. */
  async flush(): Promise<void> {
    await Promise.all(CHANNELS.map((ch) => this.send(ch)));
  }

  /**
   * Tries a last flush (bounded by closeTimeoutMs, so shutdown fits a pod's grace period), then
   * stops; states still unsent are logged with their count.
   */
  async close(): Promise<void> {
    this.closed = true;
    for (const t of Object.values(this.timers)) clearTimeout(t);
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, this.o.closeTimeoutMs);
    });
    await Promise.race([
      (async () => {
        await Promise.all(Object.values(this.inFlight));
        if (this.pending() > 0 && !this.breaker.opened) await this.flush().catch(() => {});
      })(),
      deadline,
    ]);
    clearTimeout(timer);
    if (this.pending() > 0) this.o.logger.warn({ unsent: this.pending() }, 'status reporter closing with unsent states');
    this.breaker.shutdown();
  }

  private put(channel: Channel, item: Item): void {
    this.buffers[channel].set(item.key, { seq: ++this.seq, item });
    if (!this.closed) this.schedule(channel, this.o.flushDelayMs);
  }

  private schedule(channel: Channel, delay: number): void {
    if (this.timers[channel] || this.inFlight[channel] || this.closed) return;
    this.timers[channel] = setTimeout(() => {
      delete this.timers[channel];
      void this.send(channel);
    }, delay);
  }

  private send(channel: Channel): Promise<void> {
    if (this.inFlight[channel]) return this.inFlight[channel]!;
    const p = this.drain(channel).finally(() => {
      delete this.inFlight[channel];
      if (this.buffers[channel].size && !this.closed) this.schedule(channel, this.lastSendFailed[channel] ? this.o.retryIntervalMs : 0);
    });
    this.inFlight[channel] = p;
    return p;
  }


  /** Sends one batch (the oldest states first) and settles the buffer accordingly. */
  private async drain(channel: Channel): Promise<void> {
    const buf = this.buffers[channel];
    if (!buf.size) return;
    const batch = [...buf.entries()]
      .sort((a, b) => a[1].seq - b[1].seq)
      .slice(0, this.o.maxBatch)
      .map(([key, slot]) => ({ key, ...slot }));
    try {
      await this.deliver(channel, batch);
      this.lastSendFailed[channel] = false;
    } catch (err) {
      this.lastSendFailed[channel] = true;
      this.metrics?.failed.inc();
      this.o.logger.warn({ err: (err as Error).message, channel, buffered: buf.size, breaker: this.breakerState() }, 'status report not delivered, will retry');
    }
  }

  /** Delivers a batch; on a permanent refusal bisects until the refused states are isolated. */
  private async deliver(channel: Channel, batch: (Slot & { key: string })[]): Promise<void> {
    try {
      await this.breaker.fire(channel, this.body(channel, batch.map((b) => b.item)));
      this.settle(channel, batch);
      this.metrics?.sent.inc(batch.length);
    } catch (err) {
      if (!isRejected(err)) throw err;
      if (batch.length > 1) {
        const mid = Math.ceil(batch.length / 2);
        await this.deliver(channel, batch.slice(0, mid));
        await this.deliver(channel, batch.slice(mid));
        return;
      }
      this.o.logger.error({ channel, status: err.status, response: err.body.slice(0, 500), state: batch[0]!.item.value }, 'ctrl refused status report, state dropped');
      this.settle(channel, batch);
      this.metrics?.dropped.inc();
    }
  }

  /** Removes delivered states unless a newer one for the same resource arrived meanwhile. */
  private settle(channel: Channel, batch: (Slot & { key: string })[]): void {
    const buf = this.buffers[channel];
    for (const b of batch) if (buf.get(b.key)?.seq === b.seq) buf.delete(b.key);
  }

  /** `items` come oldest first; each list keeps that order. */
  private body(channel: Channel, items: Item[]): unknown {
    const of = <K extends Item['kind']>(kind: K) => items.filter((i): i is Extract<Item, { kind: K }> => i.kind === kind).map((i) => i.value);
    if (channel === 'region') return { region: this.o.region, gc: of('gc').at(-1) };
    if (channel === 'deployments') {
      const set = of('instanceSet').at(-1);
      return { region: this.o.region, instances: of('instance'), applies: of('apply'), autoscalers: of('autoscaler'), ...(set ? { instanceSet: set } : {}) };
    }
    return { region: this.o.region, sentinels: of('sentinel'), applies: of('apply') };
  }

  private postWithRetry(channel: Channel, body: unknown): Promise<void> {
    return pRetry(() => this.post(channel, body), {
      retries: this.o.retries,
      minTimeout: this.o.minRetryMs,
      maxTimeout: this.o.maxRetryMs,
      shouldRetry: ({ error }) => !isRejected(error),
    });
  }

  private async post(channel: Channel, body: unknown): Promise<void> {
    const url = new URL(`/v1/cluster/${channel}/status`, this.o.controlPlaneUrl);
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${this.o.token}` },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(this.o.requestTimeoutMs),
    });
    const text = await res.text();
    if (res.ok) return;
    // 401 is a token problem an operator fixes, 408/429 are load: keep the states and retry.
    if (res.status >= 400 && res.status < 500 && ![401, 408, 429].includes(res.status)) throw new RejectedError(res.status, text);
    throw new Error(`ctrl answered ${res.status}`);
  }
}

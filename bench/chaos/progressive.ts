// A progressive-delivery lane of the chaos workload (issue 23): canaries and blue-greens, gated on
// a stand-in Prometheus the lanes set (mostly good, sometimes bad or without data), in an
// environment of the lane's own, one walk at a time (two walks in one environment are refused by
// design, and a rolling deploy there would end a walk `failed` for a changed table: neither is a
// fault). Operators' aborts and promotes land mid-walk. A walk that ends `failed`, or a routing
// table that breaks the traffic rules, is the system's fault, found by the harness's invariants.
import type { Call } from './workload';

export interface ProgressiveOptions {
  environmentId: string;
  prometheusUrl: string;
  setMetric(value: number | null): void;
  ctrlUrls: string[];
  adminToken: string;
  regions: string[];
}

/** Analysis bound: the good value passes it, the bad one fails it, null is no data. */
const MAX = 0.05;
const METRIC = { good: 0.01, bad: 0.9, absent: null } as const;
/** Walks of a few seconds: long enough that faults land mid-walk, short enough to finish many. */
const PAUSE = '600ms';
const INTERVAL = '200ms';
const STATUS_POLL_MS = 250;
const ENDED = new Set(['ready', 'failed', 'rolled_back', 'stopped']);

export class ProgressiveLane {
  readonly deployments: string[] = [];
  /** The deployment under a walk (or the first, rolling one coming up); null when the lane is free. */
  #busy: string | null = null;
  #stable: string | null = null;
  #turn = 0;
  /** A create in flight: the next action waits for its answer (one walk at a time). */
  #creating = false;

  constructor(
    private readonly o: ProgressiveOptions,
    private readonly api: (what: string, path: string, body?: unknown) => Promise<Call>,
    private readonly signal: AbortSignal,
  ) {}

  /** One action: an operator command on the walk under way, or the next walk. */
  async act(rand: () => number): Promise<void> {
    if (this.#creating) return;
    if (this.#busy) {
      const x = rand();
      if (x < 0.25) await this.api('abort', `/v1/deployments/${this.#busy}/abort`, {});
      else if (x < 0.4) await this.api('promote', `/v1/deployments/${this.#busy}/promote`, {});
      return;
    }
    const m = rand();
    this.o.setMetric(m < 0.7 ? METRIC.good : m < 0.9 ? METRIC.bad : METRIC.absent);
    const base = { image: `nginx:1.${100 + this.deployments.length}`, regions: this.o.regions, replicas: 1, environmentId: this.o.environmentId };
    const analysis = { interval: INTERVAL, failureLimit: 1 + Math.floor(rand() * 3), prometheus: { url: this.o.prometheusUrl, query: 'app_error_ratio', max: MAX } };
    const steps = [20, 50, 80].slice(0, 1 + Math.floor(rand() * 3)).map((weight) => ({ weight, pause: PAUSE }));
    // Without a stable the first deployment is a plain rolling one: what later walks split with.
    const strategy = !this.#stable ? undefined : rand() < 0.6 ? { type: 'canary', steps, analysis } : { type: 'blue-green', scaleDownDelay: PAUSE, analysis };
    this.#creating = true;
    const c = await this.api(strategy ? `deploy-${strategy.type}` : 'deploy-lane', '/v1/deployments', { ...base, ...(strategy ? { strategy } : {}) }).finally(() => (this.#creating = false));
    const id = (c.body as { id?: string } | null)?.id;
    if (c.status !== 202 || !id) return;
    this.deployments.push(id);
    this.#busy = id;
    const status = await this.#ended(id);
    if (status === 'ready') this.#stable = id;
    this.#busy = null;
    // The lane's first walk follows its stable at once: left to the workload's random turns, a slow
    // machine (CI: the stables ready late in the 20 s run) ended a schedule with no walk judged.
    if (!strategy && status === 'ready' && !this.signal.aborted) await this.act(rand);
  }

  /** Polls the deployment (not recorded as workload calls) until it ends or the workload stops. */
  async #ended(id: string): Promise<string | undefined> {
    while (!this.signal.aborted) {
      const url = this.o.ctrlUrls[this.#turn++ % this.o.ctrlUrls.length]!;
      try {
        const r = await fetch(`${url}/v1/deployments/${id}`, { headers: { authorization: `Bearer ${this.o.adminToken}` }, signal: AbortSignal.any([this.signal, AbortSignal.timeout(5_000)]) });
        const status = r.ok ? ((await r.json()) as { status: string }).status : undefined;
        if (status && ENDED.has(status)) return status;
      } catch {
        // a replica down or the database away: ask again
      }
      await new Promise((r) => setTimeout(r, STATUS_POLL_MS));
    }
    return undefined;
  }
}

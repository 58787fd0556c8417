// The workload a schedule runs under faults, through the public HTTP API only, alternating
// between the ctrl replicas: deploys (every third autoscaled, busy or idle), stops and
// starts, rollbacks, sentinel deploys (which wait for the result) and a fleet rollout. Every call is recorded, so the harness can tell which
// waiting calls were never answered. Images are healthy: any failure is the system's.
import { prng } from './schedule';
import { ProgressiveLane, type ProgressiveOptions } from './progressive';

export interface Call {
  what: string;
  replica: number;
  startedAt: number;
  endedAt?: number;
  status?: number;
  /** Network error text (replica killed mid-call, for instance). */
  error?: string;
  body?: unknown;
}

export interface WorkloadOptions {
  seed: number;
  ctrlUrls: string[];
  adminToken: string;
  regions: string[];
  durationMs: number;
  /** Pause between actions, so the workload stays light on a shared machine. */
  gapMs: number;
  /** Canaries and blue-greens, one lane per environment of their own (progressive.ts); absent: none. */
  progressive?: Pick<ProgressiveOptions, 'prometheusUrl' | 'setMetric'> & { environmentIds: string[] };
}

/** A stop, start or rollback sent for a resource key, for the deletion check's ambiguity rule. */
export interface Touch {
  key: string;
  t: number;
}

export class Workload {
  readonly calls: Call[] = [];
  readonly touches: Touch[] = [];
  readonly deployments: string[] = [];
  #stopped = new Set<string>();
  #lastTouch = new Map<string, number>();
  #next = 0;
  #abort = new AbortController();
  #pending = new Set<Promise<unknown>>();
  #imageSeq = 0;
  /** Deploys sent so far (which of them are autoscaled). */
  #deploys = 0;
  readonly lanes: ProgressiveLane[];

  constructor(private o: WorkloadOptions) {
    const p = o.progressive;
    this.lanes = (p?.environmentIds ?? []).map(
      (environmentId) =>
        new ProgressiveLane({ ...p!, environmentId, ctrlUrls: o.ctrlUrls, adminToken: o.adminToken, regions: o.regions }, (w, path, body) => this.api(w, path, body), this.#abort.signal),
    );
  }

  /** Sends one API call to the next replica in turn; never throws. */
  async api(what: string, path: string, body?: unknown): Promise<Call> {
    const replica = this.#next++ % this.o.ctrlUrls.length;
    const call: Call = { what, replica, startedAt: Date.now() };
    this.calls.push(call);
    try {
      const r = await fetch(this.o.ctrlUrls[replica] + path, {
        method: body === undefined ? 'GET' : 'POST',
        headers: { authorization: `Bearer ${this.o.adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
        signal: this.#abort.signal,
      });
      const text = await r.text();
      call.status = r.status;
      call.body = text ? safeJson(text) : null;
    } catch (err) {
      call.error = (err as Error).cause ? String((err as Error & { cause: Error }).cause.message ?? (err as Error).cause) : (err as Error).message;
    }
    call.endedAt = Date.now();
    return call;
  }

  /** Runs actions until the duration ends; calls still waiting keep going after it returns. */
  async run(): Promise<void> {
    const rand = prng(this.o.seed);
    const end = Date.now() + this.o.durationMs;
    // The first deploy creates each region's sentinel, which the sentinel actions then use.
    this.#track(this.#deploy());
    // The lanes draw from a stream of their own: the other actions stay what the seed made them.
    const laneRand = prng(this.o.seed ^ 0x2545f491);
    for (const lane of this.lanes) this.#track(lane.act(laneRand));
    while (Date.now() < end) {
      await new Promise((r) => setTimeout(r, this.o.gapMs * (0.5 + rand())));
      if (this.lanes.length && laneRand() < 0.5) this.#track(this.lanes[Math.floor(laneRand() * this.lanes.length)]!.act(laneRand));
      const x = rand();
      if (x < 0.3) this.#track(this.#deploy(rand));
      else if (x < 0.5) this.#track(this.#stopOrStart(rand));
      else if (x < 0.6) this.#track(this.#rollback(rand));
      else if (x < 0.85) this.#track(this.#sentinelDeploy(rand));
      else this.#track(this.#rollout(rand));
    }
  }

  /** Resolves when every call has ended, or after `ms` (the rest stay unanswered). */
  async settle(ms: number): Promise<void> {
    const all = Promise.allSettled([...this.#pending]);
    await Promise.race([all, new Promise((r) => setTimeout(r, ms))]);
  }

  /** Gives up on calls still waiting, so the process can exit. */
  abort(): void {
    this.#abort.abort();
  }

  #track(p: Promise<unknown>): void {
    this.#pending.add(p);
    void p.finally(() => this.#pending.delete(p));
  }

  async #deploy(rand?: () => number): Promise<void> {
    const replicas = rand ? 1 + Math.floor(rand() * 2) : 1;
    // Every third one autoscaled (issue 33), from the second on, so every schedule has some:
    // a busy image (cpuhot) the simulator's autoscaler takes to its maximum, then an idle one
    // (cpucold) that stays at its minimum, in turn; the routes must follow their pods.
    const n = this.#deploys++;
    const body =
      n % 3 === 1
        ? { image: `registry.local/app:${n % 6 === 1 ? 'cpuhot' : 'cpucold'}-${++this.#imageSeq}`, regions: this.o.regions, cpuMillicores: 100, autoscaling: { minReplicas: 1, maxReplicas: 3 } }
        : { image: `nginx:1.${++this.#imageSeq}`, regions: this.o.regions, replicas };
    const c = await this.api('deploy', '/v1/deployments', body);
    const id = (c.body as { id?: string } | null)?.id;
    if (c.status === 202 && id) this.deployments.push(id);
  }

  async #stopOrStart(rand: () => number): Promise<void> {
    const id = this.#pick(rand);
    if (!id) return;
    const key = `deployment/${id}`;
    // The same deployment is not flipped again within this gap: the deletion check could not
    // tell a stop and start inside one sampling interval from a wrong deletion.
    if (Date.now() - (this.#lastTouch.get(key) ?? 0) < 5_000) return;
    const stopping = !this.#stopped.has(id);
    this.#touch(key);
    const c = await this.api(stopping ? 'stop' : 'start', `/v1/deployments/${id}/${stopping ? 'stop' : 'start'}`, {});
    this.#touch(key);
    if (c.status === 200) stopping ? this.#stopped.add(id) : this.#stopped.delete(id);
  }

  async #rollback(rand: () => number): Promise<void> {
    const id = this.#pick(rand);
    if (!id) return;
    const c = await this.api('rollback', `/v1/deployments/${id}/rollback`, {});
    const newId = (c.body as { id?: string } | null)?.id;
    if (c.status === 202 && newId) this.deployments.push(newId);
  }

  async #sentinelDeploy(rand: () => number): Promise<void> {
    const list = await this.api('sentinels', '/v1/sentinels');
    const sentinels = ((list.body as { sentinels?: { id: string }[] } | null)?.sentinels ?? []).map((s) => s.id);
    if (sentinels.length === 0) return;
    const id = sentinels[Math.floor(rand() * sentinels.length)]!;
    await this.api('sentinel-deploy', `/v1/sentinels/${id}/deploy`, { replicas: 1 + Math.floor(rand() * 2) });
  }

  /** Starts a rollout or moves the current one on (resume, sometimes cancel, roll back). */
  async #rollout(rand: () => number): Promise<void> {
    const cur = await this.api('rollout-status', '/v1/sentinel-rollouts/current');
    const state = (cur.body as { state?: string } | null)?.state;
    if (state === 'paused') {
      await this.api('rollout-resume', '/v1/sentinel-rollouts/current/resume', {});
      return;
    }
    if (state === 'in_progress' && rand() < 0.3) {
      await this.api('rollout-cancel', '/v1/sentinel-rollouts/current/cancel', {});
      return;
    }
    if (state === 'cancelled' && rand() < 0.5) {
      await this.api('rollout-rollback', '/v1/sentinel-rollouts/current/rollback', {});
      return;
    }
    if (state !== 'idle' && state !== 'completed' && state !== 'cancelled') return;
    await this.api('rollout-start', '/v1/sentinel-rollouts', { image: `ghcr.io/unkeyed/sentinel:v${++this.#imageSeq}`, wavePercentages: [50, 100] });
  }

  #pick(rand: () => number): string | undefined {
    if (this.deployments.length === 0) return undefined;
    return this.deployments[Math.floor(rand() * this.deployments.length)];
  }

  #touch(key: string): void {
    const t = Date.now();
    this.#lastTouch.set(key, t);
    this.touches.push({ key, t });
  }
}

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

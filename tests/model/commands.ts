// The model-based test's commands (fast-check `commands`): each runs on the real system through
// the driver, updates the pure model with what was accepted, then has every rule checked on a
// fresh snapshot. A deployment is named by an index taken modulo the sequence's deployments, so a
// shrunk sequence still names one.
import fc from 'fast-check';
import * as M from './lifecycle-model';
import { METRIC_VALUE, REGIONS, type Answer, type Driver } from './driver';

/** fast-check's model: the pure model in a box (fast-check hands the same object to each command). */
export interface Box {
  m: M.Model;
  /** The snapshot after the previous command and the regions offline then (the offline rule). */
  prev: { snap: M.Snapshot; offline: string[] } | null;
  /** Violations of known defects seen (reported, not failed, while KNOWN_DEFECTS_FIXED is false). */
  known: M.Violation[];
  /** Distinguishes the analysis queries of all sequences. */
  queries: { next: number };
}

export type Cmd = fc.AsyncCommand<Box, Driver>;

/** Checks every rule on a fresh snapshot; throws with the failing ones. Returns the snapshot. */
export async function checkRules(box: Box, d: Driver, extra: M.Violation[] = []): Promise<M.Snapshot> {
  const snap = await d.snapshot(box.m);
  const offlineThroughout = box.prev ? box.prev.offline.filter((r) => box.m.offline.includes(r)) : [];
  const vs = [...extra, ...M.snapshotViolations(box.m, snap, REGIONS), ...(box.prev ? M.offlineViolations(box.m, box.prev.snap, snap, offlineThroughout) : [])];
  const { failing, known } = M.judged(vs);
  for (const k of known) if (!box.known.some((x) => x.rule === k.rule && x.message === k.message)) box.known.push(k);
  box.prev = { snap, offline: [...box.m.offline] };
  if (failing.length) throw new Error(`rules broken:\n${failing.map((v) => `  [${v.rule}] ${v.message}`).join('\n')}`);
  return snap;
}

/** A 5xx is never an answer to a valid request; 4xx refusals (409 state conflicts) are fine. */
function noServerError(what: string, a: Answer): Answer {
  if (a.status >= 500) throw new Error(`${what} answered ${a.status}: ${JSON.stringify(a.body)}`);
  return a;
}

const target = (box: Box, i: number) => box.m.deployments[i % box.m.deployments.length]!;
const hasDeployments = (box: Box) => box.m.deployments.length > 0;

export interface CreateSpec {
  kind: M.Kind;
  steps: number;
  failureLimit: number;
  analysis: boolean;
  /** Check interval and step pause: a pause shorter than failureLimit checks is where a limit
   *  counted per step never trips; a long one lets an offline region be noticed mid-walk. */
  interval: '100ms' | '200ms';
  pause: '150ms' | '400ms' | '800ms';
  /** An image the simulator makes ready ten times slower: commands land while it starts. */
  slow: boolean;
}

export const imageOf = (s: Pick<CreateSpec, 'slow'>) => (s.slow ? 'nginx-slow:1.27' : 'nginx:1.27');

/** The strategy body: short pauses and checks keep a walk within a second or three. */
export function strategyOf(s: CreateSpec, prometheusUrl: string, query: string): unknown {
  const analysis = s.analysis ? { interval: s.interval, failureLimit: s.failureLimit, prometheus: { url: prometheusUrl, query, max: 0.05 } } : undefined;
  if (s.kind === 'rolling') return undefined;
  if (s.kind === 'blue-green') return { type: 'blue-green', scaleDownDelay: '300ms', ...(analysis ? { analysis } : {}) };
  const weights = [20, 50, 80].slice(0, s.steps);
  return { type: 'canary', steps: weights.map((weight) => ({ weight, pause: s.pause })), ...(analysis ? { analysis } : {}) };
}

class Create implements Cmd {
  constructor(readonly s: CreateSpec) {}
  check = () => true;
  async run(box: Box, d: Driver) {
    const before = await d.snapshot(box.m);
    const query = `model_metric{n="${box.queries.next++}"}`;
    const a = noServerError('create', await d.create(strategyOf(this.s, d.prom.url, query), imageOf(this.s)));
    if (a.status !== 202) throw new Error(`create answered ${a.status}: ${JSON.stringify(a.body)}`);
    box.m = M.created(M.tick(box.m), { id: a.body.id, kind: this.s.kind, failureLimit: this.s.analysis ? this.s.failureLimit : Infinity, query, stable: M.stableIn(before) });
    await checkRules(box, d);
  }
  toString = () =>
    `create(${this.s.kind}${this.s.kind === 'canary' ? ` steps=${this.s.steps}x${this.s.pause}` : ''}${this.s.analysis ? ` limit=${this.s.failureLimit}/${this.s.interval}` : ''}${this.s.slow ? ' slow' : ''})`;
}

class DesiredState implements Cmd {
  constructor(readonly i: number, readonly state: 'running' | 'stopped') {}
  check = hasDeployments;
  async run(box: Box, d: Driver) {
    const dep = target(box, this.i);
    box.m = M.tick(box.m);
    const a = noServerError(this.toString(), await d.api(`/v1/deployments/${dep.id}/${this.state === 'running' ? 'start' : 'stop'}`, {}));
    if (a.status < 300) box.m = M.desiredAccepted(box.m, dep.id, this.state);
    await checkRules(box, d);
  }
  toString = () => `${this.state === 'running' ? 'start' : 'stop'}(#${this.i})`;
}

/** A stop and a start a few milliseconds apart (a script, or two operators): sent in that order,
 *  applied in either (their answers say which). */
class StopThenStart implements Cmd {
  constructor(readonly i: number) {}
  check = hasDeployments;
  async run(box: Box, d: Driver) {
    const dep = target(box, this.i);
    box.m = M.tick(box.m);
    const stop = d.api(`/v1/deployments/${dep.id}/stop`, {});
    await new Promise((r) => setTimeout(r, 5));
    const start = d.api(`/v1/deployments/${dep.id}/start`, {});
    const [a, b] = [noServerError('stop', await stop), noServerError('start', await start)];
    // Sent 5 ms apart, the two may still be applied in either order (the second request can
    // reach the server first on a loaded machine); the answers say which came last: a change's
    // generation, or which one changed anything at all. The first model of this command took
    // the order of sending for the order applied, and reported a start that was in fact applied
    // first (a no-op) as "overwritten" by the stop after it.
    for (const [state] of M.appliedInOrder([['stopped', a], ['running', b]])) {
      box.m = M.desiredAccepted(M.tick(box.m), dep.id, state);
    }
    await checkRules(box, d);
  }
  toString = () => `stopThenStart(#${this.i})`;
}

class Abort implements Cmd {
  constructor(readonly i: number) {}
  check = hasDeployments;
  async run(box: Box, d: Driver) {
    const dep = target(box, this.i);
    const before = await d.snapshot(box.m);
    const weightBefore = M.weightOf(before, dep.id);
    box.m = M.tick(box.m);
    const a = noServerError('abort', await d.api(`/v1/deployments/${dep.id}/abort`, {}));
    if (a.status !== 202) return void (await checkRules(box, d));
    box.m = M.abortAccepted(box.m, dep.id, weightBefore, M.serving(before, dep.stable));
    const accepted = box.m.deployments.find((x) => x.id === dep.id)!;
    const deadline = Date.now() + M.ABORT_MS;
    for (;;) {
      const snap = await checkRules(box, d);
      if (!M.abortBinds(accepted) || M.abortSettled(accepted, snap)) return;
      if (Date.now() > deadline) {
        const rule = weightBefore === 0 ? 'abort-before-traffic' : 'abort';
        const v = { rule, message: `${dep.id}: abort accepted ${M.ABORT_MS} ms ago, yet it is ${snap.deployments[dep.id]?.status} and the table is ${JSON.stringify(snap.table)}` };
        await checkRules(box, d, [v]);
        return;
      }
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  toString = () => `abort(#${this.i})`;
}

class Simple implements Cmd {
  constructor(
    readonly name: string,
    readonly act: (box: Box, d: Driver) => Promise<void>,
    readonly precondition: (box: Box) => boolean = () => true,
  ) {}
  check = (box: Readonly<Box>) => this.precondition(box as Box);
  async run(box: Box, d: Driver) {
    box.m = M.tick(box.m);
    await this.act(box, d);
    await checkRules(box, d);
  }
  toString = () => this.name;
}

const post = (what: string, path: (box: Box) => string) => async (box: Box, d: Driver) => void noServerError(what, await d.api(path(box), {}));

const specArb = fc.record({
  kind: fc.constantFrom<M.Kind>('rolling', 'canary', 'canary', 'blue-green'),
  steps: fc.integer({ min: 1, max: 3 }),
  failureLimit: fc.integer({ min: 1, max: 5 }),
  analysis: fc.boolean(),
  interval: fc.constantFrom<CreateSpec['interval']>('100ms', '200ms'),
  pause: fc.constantFrom<CreateSpec['pause']>('150ms', '400ms', '800ms'),
  slow: fc.boolean(),
});
const idx = fc.nat({ max: 7 });
const region = fc.constantFrom(...REGIONS);

/** Every command, weighted so creates and metric flips are common and restarts rarer. */
export function commandArbs(): fc.Arbitrary<Cmd>[] {
  return [
    specArb.map((s) => new Create(s)),
    specArb.map((s) => new Create(s)),
    idx.map((i) => new DesiredState(i, 'stopped')),
    idx.map((i) => new DesiredState(i, 'running')),
    idx.map((i) => new StopThenStart(i)),
    idx.map((i) => new Abort(i)),
    idx.map((i) => new Simple(`promote(#${i})`, post('promote', (b) => `/v1/deployments/${target(b, i).id}/promote`), hasDeployments)),
    idx.map((i) => new Simple(`rollback(#${i})`, async (box, d) => rollback(box, d, i), hasDeployments)),
    fc.constantFrom<M.Metric>('good', 'bad', 'absent').map((v) => new Simple(`metric(${v})`, async (box, d) => {
      d.prom.set(METRIC_VALUE[v]);
      box.m = M.metricSet(box.m, v);
    })),
    fc.constantFrom<M.Metric>('bad').map((v) => new Simple(`metric(${v})`, async (box, d) => {
      d.prom.set(METRIC_VALUE[v]);
      box.m = M.metricSet(box.m, v);
    })),
    region.map((r) => new Simple(`offline(${r})`, async (box, d) => {
      await d.offline(r);
      box.m = M.regionOffline(box.m, r);
    }, (b) => b.m.offline.length === 0)),
    region.map((r) => new Simple(`online(${r})`, async (box, d) => {
      await d.online(r);
      box.m = M.regionOnline(box.m, r);
    }, (b) => b.m.offline.includes(r))),
    region.map((r) => new Simple(`restartKrane(${r})`, (_box, d) => d.restartKrane(r))),
    fc.constant(new Simple('restartCtrl', (_box, d) => d.restartCtrl())),
    fc.integer({ min: 100, max: 1000 }).map((ms) => new Simple(`wait(${ms}ms)`, () => new Promise((r) => setTimeout(r, ms)))),
    fc.integer({ min: 100, max: 1000 }).map((ms) => new Simple(`wait(${ms}ms)`, () => new Promise((r) => setTimeout(r, ms)))),
  ];
}

/** Rollback makes a new (rolling) deployment from the target's spec: the model gains it. */
async function rollback(box: Box, d: Driver, i: number): Promise<void> {
  const before = await d.snapshot(box.m);
  const a = noServerError('rollback', await d.api(`/v1/deployments/${target(box, i).id}/rollback`, {}));
  if (a.status === 202) box.m = M.created(box.m, { id: a.body.id, kind: 'rolling', failureLimit: Infinity, query: `none-${a.body.id}`, stable: M.stableIn(before) });
}

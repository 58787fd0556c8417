// The model-based test's commands (fast-check `commands`): each runs on the real system through
// the driver, checks the answer against the model's prediction (predict.ts: a 4xx only where the
// model says so, never a 5xx), updates the pure model with what was accepted, checks the
// outcome a command promises (a promote, a rollback), then has every rule checked on a fresh
// snapshot. A deployment is named by an index taken modulo the sequence's deployments, so a
// shrunk sequence still names one. The environment's own commands (deletion) are in
// commands-environment.ts.
import fc from 'fast-check';
import * as M from './lifecycle-model';
import * as P from './predict';
import { METRIC_VALUE, REGIONS, type Answer, type Driver } from './driver';
import { environmentCommands } from './commands-environment';
import { accepted, checkRules, hasDeployments, target, unexpected, type Box, type Cmd } from './check';

export { checkRules, type Box } from './check';

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
  /** Autoscaled 1-3 (issue 33): busy (cpuhot, scaled to 3) or idle (cpucold, stays at 1). */
  autoscale: M.Autoscale;
}

export function imageOf(s: Pick<CreateSpec, 'slow'> & Partial<Pick<CreateSpec, 'autoscale'>>): string {
  const slow = s.slow ? '-slow' : '';
  if (s.autoscale === 'busy') return `registry.local/app:cpuhot${slow}-1`;
  if (s.autoscale === 'idle') return `registry.local/app:cpucold${slow}-1`;
  return s.slow ? 'nginx-slow:1.27' : 'nginx:1.27';
}

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
    const image = imageOf(this.s);
    const a = await d.create(strategyOf(this.s, d.prom.url, query), image, d.environmentId, this.s.autoscale !== 'none');
    const bad = unexpected(this.toString(), P.expectCreate(box.m, image, before, await d.snapshot(box.m)), a);
    box.m = M.tick(box.m);
    if (a.status === 202) box.m = M.created(box.m, { id: a.body.id, kind: this.s.kind, failureLimit: this.s.analysis ? this.s.failureLimit : Infinity, query, stable: M.stableIn(before), image, autoscale: this.s.autoscale });
    await checkRules(box, d, bad);
  }
  toString = () =>
    `create(${this.s.kind}${this.s.kind === 'canary' ? ` steps=${this.s.steps}x${this.s.pause}` : ''}${this.s.analysis ? ` limit=${this.s.failureLimit}/${this.s.interval}` : ''}${this.s.slow ? ' slow' : ''}${this.s.autoscale !== 'none' ? ` autoscaled-${this.s.autoscale}` : ''})`;
}

/** Sends a stop or start and checks its answer; returns the answer. */
async function desired(box: Box, d: Driver, dep: M.ModelDeployment, state: 'running' | 'stopped', before: M.Snapshot): Promise<{ a: Answer; bad: M.Violation[] }> {
  const a = await d.api(`/v1/deployments/${dep.id}/${state === 'running' ? 'start' : 'stop'}`, {});
  const allowed = state === 'stopped' ? P.expectStop() : P.expectStart(box.m, dep, before, await d.snapshot(box.m));
  return { a, bad: unexpected(`${state === 'running' ? 'start' : 'stop'}(${dep.id})`, allowed, a) };
}

class DesiredState implements Cmd {
  constructor(readonly i: number, readonly state: 'running' | 'stopped') {}
  check = hasDeployments;
  async run(box: Box, d: Driver) {
    const dep = target(box, this.i);
    const before = await d.snapshot(box.m);
    box.m = M.tick(box.m);
    const { a, bad } = await desired(box, d, dep, this.state, before);
    if (accepted(a)) box.m = M.desiredAccepted(box.m, dep.id, this.state, a.body?.changed === true);
    await checkRules(box, d, bad);
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
    const before = await d.snapshot(box.m);
    box.m = M.tick(box.m);
    const stop = d.api(`/v1/deployments/${dep.id}/stop`, {});
    await new Promise((r) => setTimeout(r, 5));
    const start = d.api(`/v1/deployments/${dep.id}/start`, {});
    const [a, b] = [await stop, await start];
    const after = await d.snapshot(box.m);
    const bad = [...unexpected(`stop(${dep.id})`, P.expectStop(), a), ...unexpected(`start(${dep.id})`, P.expectStart(box.m, dep, before, after), b)];
    // Sent 5 ms apart, the two may still be applied in either order (the second request can
    // reach the server first on a loaded machine); the answers say which came last: a change's
    // generation, or which one changed anything at all. The first model of this command took
    // the order of sending for the order applied, and reported a start that was in fact applied
    // first (a no-op) as "overwritten" by the stop after it.
    for (const [state] of M.appliedInOrder([['stopped', a], ['running', b]])) {
      box.m = M.desiredAccepted(M.tick(box.m), dep.id, state);
    }
    await checkRules(box, d, bad);
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
    const a = await d.api(`/v1/deployments/${dep.id}/abort`, {});
    const bad = unexpected(`abort(${dep.id})`, P.expectAbort(dep, before, await d.snapshot(box.m)), a);
    if (a.status !== 202) return void (await checkRules(box, d, bad));
    box.m = M.abortAccepted(box.m, dep.id, weightBefore, M.serving(before, dep.stable));
    const accepted = box.m.deployments.find((x) => x.id === dep.id)!;
    const deadline = Date.now() + M.ABORT_MS;
    for (let extra = bad; ; extra = []) {
      const snap = await checkRules(box, d, extra);
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

/** A promote: answered as the model predicts, and a 200 that was no walk's command moved the table. */
class Promote implements Cmd {
  constructor(readonly i: number) {}
  check = hasDeployments;
  async run(box: Box, d: Driver) {
    const dep = target(box, this.i);
    const before = await d.snapshot(box.m);
    box.m = M.tick(box.m);
    const a = await d.api(`/v1/deployments/${dep.id}/promote`, {});
    const after = await d.snapshot(box.m);
    const bad = unexpected(`promote(${dep.id})`, P.expectPromote(box.m, dep, REGIONS, before, after), a);
    if (a.status === 200 && a.body?.promoting !== true) bad.push(...M.promoteViolations(dep.id, before, after));
    await checkRules(box, d, bad);
  }
  toString = () => `promote(#${this.i})`;
}

/** Rollback makes a new (rolling) deployment of the target's spec and image: the model gains it. */
class Rollback implements Cmd {
  constructor(readonly i: number) {}
  check = hasDeployments;
  async run(box: Box, d: Driver) {
    const dep = target(box, this.i);
    const before = await d.snapshot(box.m);
    box.m = M.tick(box.m);
    const a = await d.api(`/v1/deployments/${dep.id}/rollback`, {});
    const bad = unexpected(`rollback(${dep.id})`, P.expectRollback(box.m, dep, before, await d.snapshot(box.m)), a);
    if (a.status === 202) {
      box.m = M.created(box.m, { id: a.body.id, kind: 'rolling', failureLimit: Infinity, query: `none-${a.body.id}`, stable: M.stableIn(before), image: dep.image, autoscale: dep.autoscale });
      const after = await d.snapshot(box.m);
      const made = after.deployments[a.body.id];
      const old = after.deployments[dep.id];
      if (made && old) bad.push(...M.rollbackViolations({ ...old, id: dep.id }, { ...made, id: a.body.id }));
    }
    await checkRules(box, d, bad);
  }
  toString = () => `rollback(#${this.i})`;
}

export class Simple implements Cmd {
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

const specArb = fc.record({
  kind: fc.constantFrom<M.Kind>('rolling', 'canary', 'canary', 'blue-green'),
  steps: fc.integer({ min: 1, max: 3 }),
  failureLimit: fc.integer({ min: 1, max: 5 }),
  analysis: fc.boolean(),
  interval: fc.constantFrom<CreateSpec['interval']>('100ms', '200ms'),
  pause: fc.constantFrom<CreateSpec['pause']>('150ms', '400ms', '800ms'),
  slow: fc.boolean(),
  autoscale: fc.constantFrom<M.Autoscale>('none', 'none', 'busy', 'idle'),
});
const idx = fc.nat({ max: 7 });
const region = fc.constantFrom(...REGIONS);

/** Every command, weighted so creates and metric flips are common and restarts and deletions rarer. */
export function commandArbs(): fc.Arbitrary<Cmd>[] {
  const metric = (v: M.Metric) => new Simple(`metric(${v})`, async (box, d) => {
    d.prom.set(METRIC_VALUE[v]);
    box.m = M.metricSet(box.m, v);
  });
  return [
    specArb.map((s) => new Create(s)),
    specArb.map((s) => new Create(s)),
    idx.map((i) => new DesiredState(i, 'stopped')),
    idx.map((i) => new DesiredState(i, 'running')),
    idx.map((i) => new StopThenStart(i)),
    idx.map((i) => new Abort(i)),
    idx.map((i) => new Promote(i)),
    idx.map((i) => new Rollback(i)),
    fc.constantFrom<M.Metric>('good', 'bad', 'absent').map(metric),
    fc.constantFrom<M.Metric>('bad').map(metric),
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
    ...environmentCommands(),
  ];
}

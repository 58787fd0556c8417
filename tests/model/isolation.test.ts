// Tenant isolation as a property (issue 32): nothing workspace A does changes what workspace B can
// observe. fast-check generates sequences of B's steps interleaved with arbitrary calls by A (keys
// of random permissions and scopes, naming B's public ids, A's own and hostile values;
// isolation-steps.ts) and runs them on the real stack (ctrl, a kube-sim and a krane;
// isolation-world.ts) twice at once: B's steps alone in workspace B1, and the same steps with A's
// calls between them in workspace B2. After each of B's steps, once B's workflows settle, its
// answer must be the same in both; at the end, so must everything B can observe
// (isolation-observe.ts): every GET B may make, B's audit rows, B's event socket, and on the
// cluster B's workloads and sentinels and every routes ConfigMap naming one of B's hostnames.
//
// The sequences of the attacks that found the breaks always run first (KNOWN_ATTACKS), and
// A's own views are checked too: none of what A lists or receives names anything of B's.
//
// Seeded and replayable: a failure prints its seed and path; replay with
//   ISOLATION_SEED=<seed> ISOLATION_PATH=<path> node --import tsx tests/run.ts tests/model/isolation.test.ts
// ISOLATION_RUNS sets the number of sequences (8 here; the long run takes 300 or more:
// `npm run test:isolation`), ISOLATION_MAX_STEPS their length.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { isDeepStrictEqual } from 'node:util';
import fc from 'fast-check';
import WebSocket from 'ws';
import { KEY_PERMISSIONS, World, type Tenant } from './isolation-world';
import { aKeySpecs, aStep, bStep, describe, KNOWN_ATTACKS, runA, runB, type Step } from './isolation-steps';
import { apiView, aView, clusterView, eventView, FOREIGN_ID, hostnamesOf, namesOf, normalize } from './isolation-observe';

/** Sequences in `npm test`, the three known attacks among them: a short run (about a minute on a loaded 2-core machine). */
const RUNS = Number(process.env.ISOLATION_RUNS ?? 8);
/** Steps per sequence (B's and A's together). B's refusal rows stay within its audit budget (10 a minute). */
const MAX_STEPS = Number(process.env.ISOLATION_MAX_STEPS ?? 6);
/** How long the clusters and sockets may take to show the same once the API does. */
const CONVERGE_MS = 30_000;

const world = await World.start();
// As the lifecycle model's file: end the process once its hooks ran, whatever the stack left open.
after(() => void setTimeout(() => process.exit(), 10_000).unref());
const figures = { sequences: 0, bSteps: 0, aSteps: 0, notRetired: 0 };
let firstFailure: unknown;

/** An event socket of `t`'s own key, collecting what arrives. */
function socketOf(t: Tenant): { events: any[]; close: () => void } {
  const ws = new WebSocket(`${world.stack.ctrl.url.replace('http', 'ws')}/v1/events`, { headers: { authorization: `Bearer ${t.keys[0]!.key}` } });
  const events: any[] = [];
  ws.on('message', (d) => events.push(JSON.parse(String(d))));
  ws.on('error', () => {});
  return { events, close: () => ws.terminate() };
}

/** Where two normalized values differ (the first few paths), for the failure message. */
function differences(a: unknown, b: unknown, path = '', out: string[] = []): string[] {
  if (out.length >= 8 || isDeepStrictEqual(a, b)) return out;
  if (a && b && typeof a === 'object' && typeof b === 'object' && Array.isArray(a) === Array.isArray(b)) {
    for (const k of new Set([...Object.keys(a), ...Object.keys(b)])) differences((a as any)[k], (b as any)[k], `${path}.${k}`, out);
  } else out.push(`${path || '(root)'}: alone ${JSON.stringify(a)?.slice(0, 300)} / beside A ${JSON.stringify(b)?.slice(0, 300)}`);
  return out;
}

/** Fails unless B's view `what` is the same in both runs, and holds nothing foreign. */
async function same(what: string, read: (t: Tenant) => Promise<unknown> | unknown, b1: Tenant, b2: Tenant): Promise<void> {
  const [v1, v2] = [normalize(await read(b1), await namesOf(world, b1)), normalize(await read(b2), await namesOf(world, b2))];
  const foreign = FOREIGN_ID.exec(JSON.stringify(v2)) ?? FOREIGN_ID.exec(JSON.stringify(v1));
  if (foreign) assert.fail(`${what}: B sees an id that is not B's: ${foreign[0]}`);
  if (!isDeepStrictEqual(v1, v2)) assert.fail(`${what} differs:\n  ${differences(v1, v2).join('\n  ')}`);
}

/** `same`, retried until it holds or `ms` pass: for what converges later (clusters, sockets). */
async function eventuallySame(what: string, read: (t: Tenant) => Promise<unknown> | unknown, b1: Tenant, b2: Tenant, ms = CONVERGE_MS): Promise<void> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await same(what, read, b1, b2);
    } catch (err) {
      if (Date.now() > deadline) throw err;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
}

async function runSequence(keys: { perms: string[]; level: 'workspace' | 'project' | 'environment' }[], steps: Step[]): Promise<void> {
  const seq = figures.sequences++;
  const [b1, b2, a] = await Promise.all([world.tenant('B1', seq), world.tenant('B2', seq), world.tenant('A', seq)]);
  const bPerms = KEY_PERMISSIONS.filter((p) => p !== 'rollouts.write');
  await Promise.all([world.key(b1, bPerms), world.key(b2, bPerms)]);
  for (const k of keys) await world.key(a, k.perms, k.level);
  const [s1, s2, sa] = [socketOf(b1), socketOf(b2), socketOf(a)];
  const counters = [{ hostnames: 0 }, { hostnames: 0 }];
  try {
    for (const [n, step] of steps.entries()) {
      if (step.who === 'A') {
        figures.aSteps++;
        await runA(world, b2, a, step);
        continue;
      }
      figures.bSteps++;
      const [r1, r2] = await Promise.all([runB(world, b1, step, counters[0]!), runB(world, b2, step, counters[1]!)]);
      await world.settle([b1, b2]);
      await same(`the answer to B's step ${n} ${describe(step)}`, (t) => (t === b1 ? r1 : r2), b1, b2);
    }
    await world.settle([b1, b2]);
    await same('every GET B may make', (t) => apiView(world, t), b1, b2);
    await eventuallySame("B's event socket", (t) => eventView((t === b1 ? s1 : s2).events), b1, b2);
    const hosts = new Map([[b1, await hostnamesOf(world, b1)], [b2, await hostnamesOf(world, b2)]]);
    await eventuallySame("B's workloads, sentinels and the routes naming B's hostnames", (t) => clusterView(world, t, hosts.get(t)!), b1, b2);
    // And A learnt nothing of B: none of B's things among what A lists or its socket names.
    const seen = await aView(world, a, sa.events);
    const leaked = [...(await namesOf(world, b1)), ...(await namesOf(world, b2))].map(([id]) => id).filter((id) => seen.has(id));
    if (leaked.length) assert.fail(`A's own views name B's ${leaked.join(', ')}`);
  } finally {
    s1.close();
    s2.close();
    sa.close();
    if (!(await world.retire([b1, b2, a]).catch(() => false))) figures.notRetired++;
  }
}

test(`nothing workspace A does changes what workspace B observes: ${RUNS} generated sequences on the real stack`, { timeout: 600 * 60_000 }, async () => {
  const property = fc.asyncProperty(aKeySpecs, fc.array(fc.oneof({ arbitrary: bStep, weight: 2 }, { arbitrary: aStep, weight: 3 }), { minLength: 1, maxLength: MAX_STEPS }), async (keys, steps) => {
    try {
      await runSequence(keys, steps);
    } catch (err) {
      // Shrinking replays smaller sequences; the failure as first seen is printed too.
      if (!firstFailure) console.log(`# first failure (before shrinking): ${steps.map(describe).join(', ')}\n#   ${String((err as Error).message).split('\n').join('\n#   ')}`);
      firstFailure ??= err;
      throw err;
    }
    if (figures.sequences % 25 === 0) console.log(`# isolation: ${JSON.stringify(figures)}`);
  });
  // Chosen here and printed first, so even a run stopped from outside can be replayed.
  const seed = Number(process.env.ISOLATION_SEED ?? Math.floor(Math.random() * 2 ** 31));
  console.log(`# isolation: seed ${seed}, ${RUNS} sequences of up to ${MAX_STEPS} steps`);
  const path = process.env.ISOLATION_PATH;
  const started = Date.now();
  try {
    // The attacks that found the breaks run first, every time (a replayed path skips them).
    const examples = path ? [] : KNOWN_ATTACKS;
    const run = await fc.check(property, { numRuns: RUNS, includeErrorInReport: true, examples, seed, ...(path ? { path, endOnFailure: true } : {}) });
    if (run.failed) {
      const replay = `ISOLATION_SEED=${run.seed} ISOLATION_PATH=${run.counterexamplePath} ISOLATION_MAX_STEPS=${MAX_STEPS} node --import tsx tests/run.ts tests/model/isolation.test.ts`;
      assert.fail(`${fc.defaultReportMessage(run)}\n\nreplay: ${replay}`);
    }
  } finally {
    console.log(`# isolation: ${JSON.stringify({ ...figures, seconds: Math.round((Date.now() - started) / 1000), seed })}`);
    await world.close();
  }
});

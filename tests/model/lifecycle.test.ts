// The deployment lifecycle checked by a model (issues 23 and 33): fast-check generates sequences
// of operator commands and faults (create rolling/canary/blue-green, fixed or autoscaled with a
// busy or idle image, stop, start, abort, promote, rollback, the environment's deletion, the
// metric good/bad/absent, a region's agent offline/online, krane and ctrl restarts), runs them
// on the real stack (driver.ts) beside a pure model (lifecycle-model.ts), checks each answer
// against the model's prediction (predict.ts) and the rules after every command and, once the
// sequence ends and the faults heal, that every deployment settles and the clusters converge to
// desired state, routes addressing the ready pods (convergence.ts), within SETTLE_MS.
//
// Seeded and replayable. On failure fast-check prints the seed, the path and the shrunk
// sequence; replay it with
//   FC_SEED=<seed> FC_PATH=<path> npm test -- tests/model/lifecycle.test.ts
// (or `node --import tsx --test tests/model/lifecycle.test.ts` with the same variables).
// FC_NUM_RUNS sets the number of sequences (50 here; `npm run test:model` runs 1,000).
// UNKEY_INFRA_MODEL_STRICT=1 fails on the known defects' rules too (lifecycle-model.ts).
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import * as M from './lifecycle-model';
import { Driver } from './driver';
import { checkRules, commandArbs, type Box } from './commands';

/** Sequences in `npm test`: the issue's floor; the long run passes FC_NUM_RUNS. */
const NUM_RUNS = Number(process.env.FC_NUM_RUNS ?? 50);
/** Commands per sequence: short, so 50 sequences fit in about a minute and a half. */
const MAX_COMMANDS = Number(process.env.FC_MAX_COMMANDS ?? 5);
/** The settle bound once faults heal: the longest walk (3 steps of 400 ms, checks, a 3 s offline
 *  grace, a ctrl takeover after a 1.5 s lease) is a few seconds; 30 s is ample on a loaded machine. */
const SETTLE_MS = 30_000;

const driver = await Driver.start();
// This file's process must end when its test does. In one CI-like run the test passed and the
// process stayed, idle, with some handle of the in-process stack still open after every close,
// and the whole suite waited on it; I did not find the handle in the time left. Ten seconds after
// the file's hooks ran (its results are reported by then), it exits, naming what was still open
// (process.getActiveResourcesInfo) so the next run that needs the exit says which handle it was.
// TODO: find the handle.
after(
  () =>
    void setTimeout(() => {
      console.error(`# model: exiting with resources still open: ${process.getActiveResourcesInfo().join(', ')}`);
      process.exit();
    }, 10_000).unref(),
);
const queries = { next: 0 };
const known: M.Violation[] = [];
let sequences = 0;
let commands = 0;
/** GC passes krane's brake held and the model confirmed as an operator (settle). */
let gcConfirmed = 0;

/** Each sequence begins with a stable deployment at 100%, so canaries and blue-greens walk; the
 *  next one is made while this one runs. */
let next = driver.prepare();
/** Finished sequences' environments, deleted one at a time in the background (driver.retire). */
let retired: Promise<void> = Promise.resolve();
const notRetired: string[] = [];
let firstFailure: unknown;
async function withStable(box: Box): Promise<void> {
  // A sequence that failed midway ran no settle: its offline kranes would fail every shrink's
  // setup, and the shrunk counterexample would be that, not the failure.
  for (const r of [...driver.kraneDown]) await driver.online(r);
  let start = await next;
  const reasons: string[] = [];
  // Made in the background while the previous sequence's faults were still healing, it may have
  // failed; two more tries on the healed system.
  for (let i = 0; 'reason' in start && i < 2; i++) (reasons.push(start.reason), (start = await driver.prepare()));
  if ('reason' in start) assert.fail(`a new environment with its first deployment ready: ${[...reasons, start.reason].join(' / ')}`);
  next = driver.prepare();
  // The sequence before this one is done with its environment.
  const previous = driver.environmentId;
  if (previous) retired = retired.then(async () => void ((await driver.retire(previous).catch(() => false)) || notRetired.push(previous)));
  await driver.newSequence(start.environmentId);
  box.m = M.created(box.m, { id: start.stable, kind: 'rolling', failureLimit: Infinity, query: `none-${start.stable}`, stable: null });
  await settle(box, 'the first deployment ready');
}

/**
 * Faults healed, the metric good; waits until every deployment is terminal or steady, then until
 * the clusters hold what desired state says, with routes that address the ready pods
 * (convergence.ts): after krane and ctrl restarts, offline regions and deletions alike.
 */
async function settle(box: Box, what: string): Promise<void> {
  for (const r of box.m.offline) await driver.online(r);
  box.m = { ...box.m, offline: [] };
  driver.prom.set(0.01);
  const deadline = Date.now() + SETTLE_MS;
  for (;;) {
    const snap = await checkRules(box, driver);
    const open = M.unsettled(box.m, snap);
    if (open.length === 0) break;
    if (Date.now() > deadline) await checkRules(box, driver, [{ rule: 'settle', message: `${what}: not terminal or steady ${SETTLE_MS} ms after the faults healed: ${open.join(', ')}` }]);
    await new Promise((r) => setTimeout(r, 50));
  }
  for (;;) {
    const diverged = await driver.divergence();
    if (diverged.length === 0) return;
    // krane's GC brake held a pass (a krane restarted after its environment went): the operator
    // confirms, as the brake asks (counted in the run's summary).
    for (const region of await driver.gcHeld()) gcConfirmed += (await driver.confirmGc(region)) > 0 ? 1 : 0;
    if (Date.now() > deadline) await checkRules(box, driver, [{ rule: 'converge', message: `${what}: the clusters differ from desired state ${SETTLE_MS} ms after the faults healed: ${diverged.join('; ')}` }]);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test(`the deployment lifecycle keeps its rules under ${NUM_RUNS} generated sequences of commands and faults`, { timeout: 150 * 60_000 }, async () => {
  const replayPath = process.env.FC_REPLAY_PATH;
  const property = fc.asyncProperty(fc.commands(commandArbs(), { maxCommands: MAX_COMMANDS, ...(replayPath ? { replayPath } : {}) }), async (cmds) => {
    const box: Box = { m: M.initialModel(), prev: null, known, queries };
    sequences++;
    try {
      await withStable(box);
      await fc.asyncModelRun(() => ({ model: box, real: driver }), cmds);
      commands += [...cmds].length;
      await settle(box, 'after the sequence');
    } catch (err) {
      // Shrinking replays smaller sequences on a system the failure may have left hurt; the
      // failure as first seen is printed too, in case the shrunk one is a different one.
      if (!firstFailure) console.log(`# first failure (before shrinking), sequence ${sequences}: ${[...cmds].join(', ')}\n#   ${String((err as Error).message).split('\n').join('\n#   ')}`);
      firstFailure ??= err;
      throw err;
    }
    // A long run says how far it got (a run stopped midway still has a figure).
    if (sequences % 100 === 0) console.log(`# model: ${sequences} sequences, ${commands} commands so far, ${known.length} known-defect findings, ${notRetired.length} environments not deleted, rss ${Math.round(process.memoryUsage().rss / 2 ** 20)} MiB`);
  });
  const seed = process.env.FC_SEED ? Number(process.env.FC_SEED) : undefined;
  const path = process.env.FC_PATH;
  const started = Date.now();
  try {
    const run = await fc.check(property, { numRuns: NUM_RUNS, includeErrorInReport: true, ...(seed !== undefined ? { seed } : {}), ...(path ? { path, endOnFailure: true } : {}) });
    if (run.failed) {
      const shrunk = String(run.counterexample?.[0] ?? '');
      const replay = /replayPath="([^"]+)"/.exec(shrunk)?.[1];
      const cmd = `FC_SEED=${run.seed} FC_PATH=${run.counterexamplePath} FC_MAX_COMMANDS=${MAX_COMMANDS}${replay ? ` FC_REPLAY_PATH=${replay}` : ''}${M.STRICT && !M.KNOWN_DEFECTS_FIXED ? ' UNKEY_INFRA_MODEL_STRICT=1' : ''} npm test -- tests/model/lifecycle.test.ts`;
      assert.fail(`${fc.defaultReportMessage(run)}\n\nreplay: ${cmd}`);
    }
  } finally {
    await next;
    await retired;
    await driver.close();
    console.log(`# model: ${sequences} sequences, ${commands} commands (+1 create each) in ${Math.round((Date.now() - started) / 1000)} s; seed ${seed ?? 'random (printed on failure)'}; environments not deleted: ${notRetired.length}; gc passes confirmed: ${gcConfirmed}`);
    if (known.length) {
      console.log(`# defects reported, not failed (known, or still open: OPEN_DEFECT_RULES in lifecycle-model.ts): ${known.length}`);
      for (const v of known.slice(0, 20)) console.log(`#   [${v.rule}] ${v.message}`);
    }
  }
});

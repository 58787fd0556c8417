// The traffic transactions of progressive delivery against a real database, without the engine:
// which deployment a walk takes as its stable, what a withdrawal leaves, a walk refusing to write
// over someone else's change, and the one lock order (the environment's routes row first) that
// keeps a walk's switch and an operator's promote from deadlocking.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testDb } from '../../helpers/db';
import { until } from '../../helpers/wait';
import { newId } from '../../../src/ids';
import { deployments, routes, tenancy, withTx } from '../../../src/store';
import type { Backend } from '../../../src/store/routes';
import { completeSwitch, startWalk, type StrategyDeps } from '../../../src/workflow/progressive/walk';
import { promoteDeployment, type CommandDeps } from '../../../src/workflow/deploy/commands';
import { noMetrics } from '../../../src/workflow/metrics';
import { NO_OUTBOUND_ALLOW } from '../../../src/workflow/outbound/policy';
import { withdrawTraffic } from '../../../src/workflow/progressive/traffic';

const db = await testDb();
const sql = db.sql;
const APEX = 'unkey.local';
const CANARY = { type: 'canary', steps: [{ weight: 10, pause: '1m' }] };
const sdeps: StrategyDeps = { sql, apexDomain: APEX, recheckMs: 1000, wakeKey: 'wake', metrics: noMetrics, outbound: NO_OUTBOUND_ALLOW, regions: [] };
// Promote of a ready deployment never reaches the engine (only a walk in progress is handed a command).
const cdeps = { sql, apexDomain: APEX, engine: undefined, deploy: undefined, desiredState: undefined } as unknown as CommandDeps;

/** An environment of its own, so tests do not share a routing table. */
async function newEnvironment(): Promise<string> {
  const environmentId = newId('env');
  await tenancy.insertEnvironment(sql, { environmentId, workspaceId: 'default', projectId: 'default', appId: 'default', slug: environmentId });
  return environmentId;
}

async function newDeployment(environmentId: string, s: { status: deployments.DeploymentStatus; desired: 'running' | 'stopped'; strategy?: unknown }): Promise<string> {
  const id = newId('dep');
  await deployments.insertDeployment(sql, {
    id,
    workspaceId: 'default',
    projectId: 'default',
    appId: 'default',
    environmentId,
    image: 'nginx:1.27',
    buildContext: null,
    cpuMillicores: 100,
    memoryMib: 128,
    replicas: 1,
    port: 8080,
    command: [],
    env: {},
    regions: ['us-east-1'],
    strategy: s.strategy ?? null,
  });
  await deployments.setDeploymentStatus(sql, id, s.status);
  await deployments.setDeploymentDesiredState(sql, id, s.desired);
  return id;
}

const setTable = (environmentId: string, backends: Backend[]) =>
  routes.setRoutes(sql, { environmentId, workspaceId: 'default', hostname: `default-${environmentId}.${APEX}`, backends });
const tableOf = async (environmentId: string) => (await routes.getRoutes(sql, environmentId))?.backends ?? [];

test('a walk takes as its stable only a deployment that is running and ready', async () => {
  // A table as a stop left it before stops withdrew traffic: 100% on a stopped deployment.
  const env = await newEnvironment();
  const stopped = await newDeployment(env, { status: 'stopped', desired: 'stopped' });
  await setTable(env, [{ deploymentId: stopped, weight: 100 }]);
  const canary = await newDeployment(env, { status: 'deploying', desired: 'running', strategy: CANARY });
  const start = await withTx(sql, (tx) => startWalk(tx, sdeps, canary, env));
  assert.equal(start.stable, null, 'a stopped deployment is no stable: an abort would send everything to it');
  assert.ok(!(await tableOf(env)).some((b) => b.deploymentId === canary && b.weight > 0));

  // One that is running but not ready (started again, its instances still coming up) is none either.
  const env2 = await newEnvironment();
  const starting = await newDeployment(env2, { status: 'deploying', desired: 'running' });
  await setTable(env2, [{ deploymentId: starting, weight: 100 }]);
  const canary2 = await newDeployment(env2, { status: 'deploying', desired: 'running', strategy: CANARY });
  assert.equal((await withTx(sql, (tx) => startWalk(tx, sdeps, canary2, env2))).stable, null);

  // A running, ready one is.
  const env3 = await newEnvironment();
  const serving = await newDeployment(env3, { status: 'ready', desired: 'running' });
  await setTable(env3, [{ deploymentId: serving, weight: 100 }]);
  const canary3 = await newDeployment(env3, { status: 'deploying', desired: 'running', strategy: CANARY });
  assert.equal((await withTx(sql, (tx) => startWalk(tx, sdeps, canary3, env3))).stable, serving);
  assert.deepEqual(await tableOf(env3), [{ deploymentId: serving, weight: 100 }, { deploymentId: canary3, weight: 0 }]);
});

/** Sessions of this database waiting for a lock (a row lock shows as a wait on a transaction). */
const lockWaiters = async () => {
  const [row] = await sql<{ n: number }[]>`
    SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`;
  return row!.n;
};

test('a canary\'s switch and a promote of its stable, queued on the same table, never deadlock: one waits for the other', async () => {
  const env = await newEnvironment();
  const stable = await newDeployment(env, { status: 'ready', desired: 'running' });
  const canary = await newDeployment(env, { status: 'network', desired: 'running', strategy: CANARY });
  await setTable(env, [{ deploymentId: stable, weight: 90 }, { deploymentId: canary, weight: 10 }]);

  // A third session holds the routes row, so both transactions line up behind it in a known
  // order, each having taken whatever it locks before the table; then it lets them go.
  const blocker = await sql.reserve();
  try {
    await blocker`BEGIN`;
    // It waits idle in its transaction while the others queue (two polls of up to 10 s): past
    // the shared test server's 15 s limit on a slow machine (tests/run.ts).
    await blocker`SET LOCAL idle_in_transaction_session_timeout = '60s'`;
    await blocker`SELECT 1 FROM environment_routes WHERE environment_id = ${env} FOR UPDATE`;
    const walk = { id: canary, environmentId: env, stable, expected: [{ deploymentId: stable, weight: 90 }, { deploymentId: canary, weight: 10 }] };
    const switched = withTx(sql, (tx) => completeSwitch(tx, sdeps, walk));
    await until(async () => (await lockWaiters()) === 1, 10_000, 'the switch waiting');
    const promoted = promoteDeployment(cdeps, stable);
    await until(async () => (await lockWaiters()) === 2, 10_000, 'the promote waiting');
    await blocker`ROLLBACK`;
    const [s, p] = await Promise.allSettled([switched, promoted]);
    for (const r of [s, p]) if (r.status === 'rejected') assert.notEqual((r.reason as { code?: string }).code, '40P01', `deadlock: ${String(r.reason)}`);
    assert.equal(s.status, 'fulfilled', s.status === 'rejected' ? String(s.reason) : '');
    // The switch went first and stopped the stable, so the promote finds it no longer ready.
    assert.equal(p.status, 'rejected');
    assert.equal((p as PromiseRejectedResult).reason.code, 'ERR_DEPLOYMENT_NOT_READY');
    assert.deepEqual(await tableOf(env), [{ deploymentId: canary, weight: 100 }]);
  } finally {
    await blocker`ROLLBACK`.catch(() => {});
    blocker.release();
  }
});

test('each traffic transaction waits for the table before it locks any deployment row', async () => {
  const env = await newEnvironment();
  const stable = await newDeployment(env, { status: 'ready', desired: 'running' });
  const canary = await newDeployment(env, { status: 'network', desired: 'running', strategy: CANARY });
  // The promote's own: ready when its turn comes (the switch before it stops the stable, and a
  // promote of a deployment not ready is refused before any lock).
  const other = await newDeployment(env, { status: 'ready', desired: 'running' });
  await setTable(env, [{ deploymentId: stable, weight: 100 }, { deploymentId: canary, weight: 0 }]);
  const cases: [string, () => Promise<unknown>][] = [
    ['startWalk', () => withTx(sql, (tx) => startWalk(tx, sdeps, canary, env))],
    ['completeSwitch', () => withTx(sql, (tx) => completeSwitch(tx, sdeps, { id: canary, environmentId: env, stable, expected: null }))],
    ['promote', () => promoteDeployment(cdeps, other)],
  ];
  for (const [name, run] of cases) {
    const blocker = await sql.reserve();
    let pending: Promise<unknown> | undefined;
    try {
      await blocker`BEGIN`;
      await blocker`SET LOCAL idle_in_transaction_session_timeout = '60s'`;
      await blocker`SELECT 1 FROM environment_routes WHERE environment_id = ${env} FOR UPDATE`;
      pending = run().catch(() => {});
      await until(async () => (await lockWaiters()) === 1, 10_000, `${name} waiting`);
      // While it waits for the table, every deployment row is free: NOWAIT fails at once otherwise.
      for (const id of [stable, canary, other]) {
        await assert.doesNotReject(withTx(sql, (tx) => tx`SELECT 1 FROM deployments WHERE id = ${id} FOR UPDATE NOWAIT`), `${name} holds ${id} while waiting for the table`);
      }
    } finally {
      await blocker`ROLLBACK`.catch(() => {});
      blocker.release();
      await pending;
    }
  }
});

test('a withdrawal gives the weight to the deployments that serve; with none left the table empties everywhere', async () => {
  const env = await newEnvironment();
  const a = await newDeployment(env, { status: 'ready', desired: 'running' });
  const b = await newDeployment(env, { status: 'ready', desired: 'running' });
  const canary = await newDeployment(env, { status: 'network', desired: 'running', strategy: CANARY });
  await setTable(env, [{ deploymentId: a, weight: 60 }, { deploymentId: b, weight: 30 }, { deploymentId: canary, weight: 10 }]);
  await withTx(sql, (tx) => withdrawTraffic(tx, APEX, env, a));
  assert.deepEqual(await tableOf(env), [{ deploymentId: b, weight: 90 }, { deploymentId: canary, weight: 10 }], 'the canary under analysis gets nothing it was not given');
  await withTx(sql, (tx) => withdrawTraffic(tx, APEX, env, b));
  const empty = await routes.getRoutes(sql, env);
  assert.deepEqual([empty!.backends, empty!.regions], [[], []], 'no deployment may serve: no backend, in no region');
});

test('a switch over a table someone else changed writes nothing and says what it found', async () => {
  const env = await newEnvironment();
  const stable = await newDeployment(env, { status: 'ready', desired: 'running' });
  const canary = await newDeployment(env, { status: 'network', desired: 'running', strategy: CANARY });
  const walked = [{ deploymentId: stable, weight: 50 }, { deploymentId: canary, weight: 50 }];
  // The walk wrote 50/50; an operator's promote of the stable came after it.
  await setTable(env, [{ deploymentId: stable, weight: 100 }]);
  await assert.rejects(withTx(sql, (tx) => completeSwitch(tx, sdeps, { id: canary, environmentId: env, stable, expected: walked })), (err: Error & { code?: string }) => {
    assert.equal(err.code, 'ERR_DEPLOYMENT_STATE_CONFLICT');
    assert.match(err.message, new RegExp(`the table is ${stable}:100, this walk last set ${stable}:50, ${canary}:50`));
    return true;
  });
  assert.deepEqual(await tableOf(env), [{ deploymentId: stable, weight: 100 }]);
  assert.equal((await deployments.getDeployment(sql, stable))!.status, 'ready', 'the stable was not stopped');
});

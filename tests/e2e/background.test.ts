// ctrl's background timers running as wired in startCtrl, with only their periods (and ages)
// shortened through CtrlOverrides: the recovery sweep restarts a stranded deployment, the
// engine's purge deletes finished invocations, and the outbox cleanup deletes expired changes.
// Nobody calls the functions here: if a timer were not started, or started with the wrong
// arguments, these tests would time out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import pino from 'pino';
import { testStack, until } from '../helpers/stack';
import { newId } from '../../src/ids';
import { changes, deployments, withTx } from '../../src/store';

// ctrl's own log lines, kept: the sweeps say what they did, and that is the evidence they ran.
const lines: { msg: string; [k: string]: unknown }[] = [];
const sink = new Writable({
  write(chunk, _enc, done) {
    for (const l of String(chunk).split('\n')) if (l) lines.push(JSON.parse(l));
    done();
  },
});
const logged = (msg: string, field: string) => lines.some((l) => l.msg === msg && Number(l[field]) > 0);

const stack = await testStack({
  regions: ['us-east-1'],
  ctrl: {
    logger: pino({ level: 'info' }, sink),
    recoverEveryMs: 100,
    recoverAfterMs: 0,
    // Finished invocations and changes expire at once; the sweeps run every 100 ms.
    engine: { retentionMs: 1, purgeEveryMs: 100 },
    feed: { cleanupTtlMs: 1, cleanupIntervalMs: 100 },
  },
});

test('the recovery sweep restarts a deployment whose workflow never started', async () => {
  // The row as a ctrl that died between writing it and starting its workflow leaves it.
  const id = newId('dep');
  await deployments.insertDeployment(stack.db.sql, {
    id,
    workspaceId: 'default',
    projectId: 'default',
    appId: 'default',
    environmentId: 'default',
    image: 'nginx:1.27',
    buildContext: null,
    cpuMillicores: 100,
    memoryMib: 64,
    replicas: 1,
    port: 8080,
    command: [],
    env: {},
    regions: ['us-east-1'],
  });
  await until(async () => (await deployments.getDeployment(stack.db.sql, id))!.status === 'ready', 30_000, 'the stranded deployment ready');
  assert.ok(logged('started deploy workflows of stranded deployments', 'count'), 'the sweep, not anything else, started it');
});

test("the engine's purge deletes finished invocations, and the outbox cleanup expired changes", async () => {
  // A change row of our own, seen inside the transaction that writes it: it surely existed.
  const marker = newId('dep');
  await withTx(stack.db.sql, async (tx) => {
    await changes.recordChange(tx, 'deployment_topology', marker, 'us-east-1');
    assert.equal((await changes.listChangesFor(tx, 'deployment_topology', marker)).length, 1);
  });
  // A deploy: its invocation is listed while it runs (it waits for its pods), then finishes.
  const r = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1 } });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  const id = r.body.id as string;
  await until(async () => (await stack.api(`/v1/deployments/${id}`)).body.status === 'ready', 30_000, 'ready');
  const invocations = async () => (await stack.ctrl.engine.listInvocations({ target: 'DeployService', key: id })).length;
  await until(async () => (await invocations()) === 0 && logged('engine purged finished invocations', 'purged'), 30_000, 'the finished deploy invocation purged');
  await until(async () => (await changes.listChangesFor(stack.db.sql, 'deployment_topology', marker)).length === 0 && logged('feed cleanup done', 'deleted'), 30_000, 'the outbox row deleted');
  // Deleting history did not delete the deployment.
  assert.equal((await stack.api(`/v1/deployments/${id}`)).body.status, 'ready');
});

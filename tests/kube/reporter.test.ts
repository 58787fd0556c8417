import { test } from 'node:test';
import { until } from '../helpers/wait';
import { freePort } from '../../src/net';
import assert from 'node:assert/strict';
import { pause } from '../helpers/wait';
import { assertEvery } from '../helpers/assert';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { StatusReporter } from '../../src/sync/reporter';
import { createLogger } from '../../src/log';
import type { InstanceReport } from '../../src/sync/wire';

const logger = createLogger('silent');

interface FakeCtrl {
  server: Server;
  bodies: { path: string; body: any }[];
  /** Status to answer with, per request; default 200. */
  answer: (path: string, body: any) => number;
}

function listen(port: number, ctrl: Omit<FakeCtrl, 'server'>): Promise<Server> {
  const server = createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      const body = JSON.parse(data);
      const status = ctrl.answer(req.url!, body);
      if (status === 200) ctrl.bodies.push({ path: req.url!, body });
      res.writeHead(status, { 'content-type': 'application/json' }).end('{}');
    });
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}


const inst = (pod: string, status: InstanceReport['status'], reason: string | null = null): InstanceReport => ({
  deploymentId: 'dep-a',
  podName: pod,
  address: `${pod}.dep-a.unkey.svc.cluster.local`,
  status,
  reason,
  cpuMillicores: 100,
  memoryMib: 128,
  deleted: false,
});


test('ctrl down: states are kept (latest wins), the breaker opens, and all is delivered when ctrl returns', async () => {
  const port = await freePort();
  const r = new StatusReporter({
    controlPlaneUrl: `http://127.0.0.1:${port}`,
    token: 't',
    region: 'us-east-1',
    logger,
    flushDelayMs: 10,
    retryIntervalMs: 50,
    retries: 0,
    minRetryMs: 10,
    breaker: { resetTimeoutMs: 300, volumeThreshold: 2 },
  });
  const events: string[] = [];
  r.breaker.on('open', () => events.push('open'));
  r.breaker.on('close', () => events.push('close'));
  r.instance(inst('dep-a-0', 'pending', 'ContainerCreating'));
  r.instance(inst('dep-a-1', 'pending'));
  const before = Date.now();
  r.sentinel({ sentinelId: 'snt-a', availableReplicas: 0, updatedReplicas: 0, readyReplicas: 0, observedGeneration: 1, runningImage: null, health: 'unknown', specHash: null });
  const sentAfter = Date.now() + 1;
  await until(() => r.breakerState() === 'open');
  // newer states replace older ones for the same pod while ctrl is down
  r.instance(inst('dep-a-0', 'running'));
  r.instance(inst('dep-a-1', 'failed', 'CrashLoopBackOff'));
  assert.equal(r.pending(), 3);

  const ctrl = { bodies: [] as { path: string; body: any }[], answer: () => 200 };
  const server = await listen(port, ctrl);
  try {
    await until(() => r.pending() === 0);
    assert.equal(r.breakerState(), 'closed');
    assert.deepEqual(events, ['open', 'close']);
    const instances = ctrl.bodies.filter((b) => b.path === '/v1/cluster/deployments/status').flatMap((b) => b.body.instances);
    // exactly the latest state per pod, nothing stale
    assert.deepEqual(
      instances.map((i: InstanceReport) => `${i.podName}:${i.status}:${i.reason}`).sort(),
      ['dep-a-0:running:null', 'dep-a-1:failed:CrashLoopBackOff'],
    );
    const sentinels = ctrl.bodies.filter((b) => b.path === '/v1/cluster/sentinels/status').flatMap((b) => b.body.sentinels);
    assert.equal(sentinels.length, 1);
    // Stamped when observed (not when sent): shown by ctrl, never used to order.
    assert.ok(sentinels[0].observedAt >= before && sentinels[0].observedAt < sentAfter, `observedAt ${sentinels[0].observedAt}`);
    assertEvery(ctrl.bodies, (b) => b.body.region === 'us-east-1');
  } finally {
    await r.close();
    await new Promise((res) => server.close(res));
  }
});

test('a state refused permanently is isolated by bisection; the rest of the batch is delivered', async () => {
  const ctrl = {
    bodies: [] as { path: string; body: any }[],
    answer: (_p: string, body: any) => (body.instances?.some((i: InstanceReport) => i.deploymentId === 'dep-foreign') ? 403 : 200),
  };
  const server = await listen(0, ctrl);
  const port = (server.address() as AddressInfo).port;
  const r = new StatusReporter({ controlPlaneUrl: `http://127.0.0.1:${port}`, token: 't', region: 'us-east-1', logger, flushDelayMs: 10, retries: 0 });
  try {
    for (let i = 0; i < 5; i++) r.instance(inst(`dep-a-${i}`, 'running'));
    r.instance({ ...inst('x-0', 'running'), deploymentId: 'dep-foreign' });
    await until(() => r.pending() === 0);
    const delivered = ctrl.bodies.flatMap((b) => b.body.instances).map((i: InstanceReport) => i.podName).sort();
    assert.deepEqual(delivered, ['dep-a-0', 'dep-a-1', 'dep-a-2', 'dep-a-3', 'dep-a-4']);
    // a refusal is an answer: the circuit stays closed
    assert.equal(r.breakerState(), 'closed');
  } finally {
    await r.close();
    await new Promise((res) => server.close(res));
  }
});

test('a state updated while its batch is in flight is sent again', async () => {
  let release: (() => void) | undefined;
  const ctrl = { bodies: [] as { path: string; body: any }[], answer: () => 200 };
  const server = createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      ctrl.bodies.push({ path: req.url!, body: JSON.parse(data) });
      if (ctrl.bodies.length === 1) release = () => res.writeHead(200).end('{}');
      else res.writeHead(200).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as AddressInfo).port;
  const r = new StatusReporter({ controlPlaneUrl: `http://127.0.0.1:${port}`, token: 't', region: 'us-east-1', logger, flushDelayMs: 5 });
  try {
    r.instance(inst('dep-a-0', 'pending'));
    await until(() => release !== undefined);
    r.instance(inst('dep-a-0', 'running'));
    release!();
    await until(() => r.pending() === 0 && ctrl.bodies.length === 2);
    assert.equal(ctrl.bodies[1]!.body.instances[0].status, 'running');
  } finally {
    await r.close();
    await new Promise((res) => server.close(res));
  }
});

test('options passed as undefined keep their defaults (no busy retry loop against a dead ctrl)', async () => {
  const port = await freePort();
  let attempts = 0;
  const r = new StatusReporter({
    controlPlaneUrl: `http://127.0.0.1:${port}`, token: 't', region: 'us-east-1', logger,
    flushDelayMs: undefined, retryIntervalMs: undefined, retries: 0, breaker: { resetTimeoutMs: undefined },
  });
  r.breaker.on('fire', () => attempts++);
  r.instance(inst('dep-a-0', 'pending'));
  // An absence sampled over 600 ms (a busy loop would make hundreds of attempts; a slow machine
  // only makes fewer): the default retry interval is 1 s, so the first attempt only.
  await pause(600);
  assert.ok(attempts <= 2, `${attempts} attempts in 600 ms`);
  assert.equal(r.pending(), 1);
  await r.close();
});

test('sentinel states carry the order of this leadership: { leaseEpoch, seq } from lead(), none before it', async () => {
  const port = await freePort();
  const ctrl = { bodies: [] as { path: string; body: any }[], answer: () => 200 };
  const server = await listen(port, ctrl);
  const r = new StatusReporter({ controlPlaneUrl: `http://127.0.0.1:${port}`, token: 't', region: 'us-east-1', logger, flushDelayMs: 5 });
  const state = (id: string, available: number) => ({ sentinelId: id, availableReplicas: available, updatedReplicas: 0, readyReplicas: 0, observedGeneration: 1, runningImage: null, health: 'unknown' as const, specHash: null });
  const sent = () => ctrl.bodies.filter((b) => b.path === '/v1/cluster/sentinels/status').flatMap((b) => b.body.sentinels);
  try {
    r.sentinel(state('snt-a', 0));
    await until(() => sent().length === 1);
    assert.deepEqual([sent()[0].leaseEpoch, sent()[0].seq], [undefined, undefined], 'without leadership: applied as they come');
    r.lead(7);
    r.sentinel(state('snt-a', 1));
    r.sentinel(state('snt-b', 1));
    await until(() => sent().length === 3);
    assert.deepEqual(sent().slice(1).map((s: any) => `${s.sentinelId}:${s.leaseEpoch}:${s.seq}`), ['snt-a:7:1', 'snt-b:7:2']);
    // A new leadership counts again from its own epoch.
    r.lead(8);
    r.sentinel(state('snt-a', 2));
    await until(() => sent().length === 4);
    assert.deepEqual([sent()[3].leaseEpoch, sent()[3].seq], [8, 1]);
    assert.ok(sent().every((s: any) => typeof s.observedAt === 'number'), 'the wall clock still goes along, for display');
  } finally {
    await r.close();
    await new Promise((res) => server.close(res));
  }
});

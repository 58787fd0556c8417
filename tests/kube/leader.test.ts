// Lease leader election among krane replicas against the simulator, through the unchanged
// @kubernetes/client-node: one leader at a time; a dead leader (no release) is replaced within
// 15 s; a leader that stops releases the Lease and a standby takes over at once.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { startSim } from '../kube-sim/helpers';
import { until } from '../helpers/wait';
import { LeaderElector, LEASE_NAMESPACE, leaseName } from '../../src/kube/leader';
import pino from 'pino';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { simKubeConfig } from '../../src/kube-sim';
import { createLogger } from '../../src/log';

const fx = await startSim();
after(() => fx.close());
const logger = createLogger('silent');

function candidate(identity: string, region: string, log = logger) {
  const events: string[] = [];
  const e = new LeaderElector({
    kubeConfig: fx.kc,
    region,
    identity,
    logger: log,
    onStartedLeading: () => void events.push('start'),
    onStoppedLeading: () => void events.push('stop'),
  });
  return { e, events };
}

test('one of two replicas leads; when it dies without releasing, the other takes over once the Lease expires', async () => {
  const a = candidate('krane-a', 'r1');
  const b = candidate('krane-b', 'r1');
  a.e.start();
  await until(() => a.e.isLeader, 10_000, 'a leads');
  b.e.start();
  // b has seen the Lease held and renewed: it stays a standby.
  await until(async () => (await fx.objects.read({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: leaseName('r1'), namespace: LEASE_NAMESPACE } })) as any, 5_000, 'lease exists');
  assert.equal(b.e.isLeader, false);
  await a.e.abandon();
  // The design figure is lease + retry = 12 s; the deadline leaves room for a loaded machine
  // (timing itself is not asserted in tests).
  await until(() => b.e.isLeader, 20_000, 'b takes over');
  const lease: any = await fx.objects.read({ apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: leaseName('r1'), namespace: LEASE_NAMESPACE } });
  assert.equal(lease.spec.holderIdentity, 'krane-b');
  assert.equal(lease.spec.leaseTransitions, 1);
  assert.deepEqual(b.events, ['start']);
  await b.e.stop();
  assert.deepEqual(b.events, ['start', 'stop']);
});

test('a leader that stops releases the Lease and the standby takes over without waiting for expiry', async () => {
  const a = candidate('krane-a', 'r2');
  const b = candidate('krane-b', 'r2');
  a.e.start();
  await until(() => a.e.isLeader, 10_000, 'a leads');
  b.e.start();
  await a.e.stop();
  assert.equal(a.e.isLeader, false);
  // Released: holder empty, so b acquires on its next round (2 s retry), well before 10 s expiry.
  await until(() => b.e.isLeader, 6_000, 'b takes over after release');
  await b.e.stop();
});

/** A TCP relay to the simulator that can freeze: bytes stop flowing both ways, sockets stay open. */
async function freezableRelay(target: URL) {
  const { createServer, connect } = await import('node:net');
  let frozen = false;
  const pairs: [import('node:net').Socket, import('node:net').Socket][] = [];
  const srv = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    pairs.push([client, upstream]);
    client.on('data', (d) => frozen || upstream.write(d));
    upstream.on('data', (d) => frozen || client.write(d));
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
  after(() => {
    for (const [c, u] of pairs) (c.destroy(), u.destroy());
    srv.close();
  });
  return { port: (srv.address() as import('node:net').AddressInfo).port, freeze: () => void (frozen = true) };
}

test('a leader whose Lease requests hang (a half-open link) steps down by the renew deadline, not when they return', async () => {
  const { KubeConfig } = await import('@kubernetes/client-node');
  const cluster = fx.kc.getCurrentCluster()!;
  const target = new URL(cluster.server);
  const relay = await freezableRelay(target);
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ ...cluster, name: 'relay', server: `${target.protocol}//127.0.0.1:${relay.port}` }],
    users: [fx.kc.getCurrentUser()!],
    contexts: [{ name: 'relay', cluster: 'relay', user: fx.kc.getCurrentUser()!.name }],
    currentContext: 'relay',
  });
  const events: string[] = [];
  const e = new LeaderElector({
    kubeConfig: kc, region: 'r-hang', identity: 'krane-hang', logger, leaseMs: 3_000, retryMs: 200, renewDeadlineMs: 1_000,
    onStartedLeading: () => void events.push('start'),
    onStoppedLeading: () => void events.push('stop'),
  });
  e.start();
  await until(() => e.isLeader, 10_000, 'leads');
  relay.freeze();
  // Another replica may take the Lease once it has not changed for leaseMs (3 s): this one must
  // have stopped before that, although no request of its own ever comes back.
  await until(() => !e.isLeader, 2_900, 'stepped down while its requests hang');
  assert.deepEqual(events, ['start', 'stop']);
  await e.abandon();
});

test('two replicas starting at once: the one that loses the race to create the Lease is a standby, not a failure', async () => {
  const lines: string[] = [];
  const log = pino({ level: 'debug' }, { write: (l: string) => void lines.push(l) });
  const a = candidate('krane-a', 'r3', log);
  const b = candidate('krane-b', 'r3', log);
  a.e.start();
  b.e.start();
  await until(() => a.e.isLeader || b.e.isLeader, 10_000, 'one leads');
  // Evidence that the race happened: the other replica's create came back 409.
  await until(() => lines.some((l) => l.includes('lease created by another replica first')), 5_000, 'the lost create race');
  assert.notEqual(a.e.isLeader, b.e.isLeader, 'exactly one leads');
  assert.deepEqual(lines.filter((l) => l.includes('lease request failed')), [], 'a lost create race is not logged as a failure');
  await Promise.all([a.e.stop(), b.e.stop()]);
});

test('a Lease request on a silent link is aborted with its round, not left open', async (t) => {
  // An API server that reads requests and never answers. Each round is given up at the renew
  // deadline; before, its request stayed open, and a silent link gained a socket every round.
  let rounds = 0;
  const server = createServer(() => void rounds++);
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  t.after(() => {
    server.closeAllConnections();
    server.close();
  });
  const e = new LeaderElector({
    kubeConfig: simKubeConfig(`http://127.0.0.1:${(server.address() as AddressInfo).port}`),
    region: 'silent',
    identity: 'krane-silent',
    logger,
    retryMs: 50,
    renewDeadlineMs: 100,
    leaseMs: 300,
    onStartedLeading: () => {},
    onStoppedLeading: () => {},
  });
  e.start();
  await until(() => rounds >= 10, { what: 'ten rounds of Lease requests', show: () => ({ rounds }) });
  const open = await new Promise<number>((r) => server.getConnections((_err, n) => r(n)));
  await e.stop();
  assert.equal(e.isLeader, false);
  assert.ok(open <= 3, `${open} connections left open after ${rounds} rounds`);
});

// deployment_instance_startup_time_seconds: the pure startup derivation, and the instance
// watcher counting each pod's startup once (not again on a relist or a second report, and not
// for pods already running when it started).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pause } from '../helpers/wait';
import type { V1Pod } from '@kubernetes/client-node';
import { InstanceStatusWatcher, podStartup } from '../../src/kube/status';
import type { StatusSink } from '../../src/sync/wire';
import { controller, logger, startSim, until } from './helpers';
import { deploymentState } from './fixtures';

const created = '2026-01-01T00:00:00Z';
const pod = (ready: boolean, readyAt = '2026-01-01T00:00:07Z'): V1Pod => ({
  metadata: { name: 'dep-a-0', namespace: 'unkey', creationTimestamp: new Date(created), labels: { 'unkey.com/deployment.id': 'dep-a' } },
  spec: { containers: [{ name: 'app', image: 'x' }] },
  status: {
    phase: 'Running',
    conditions: [{ type: 'Ready', status: ready ? 'True' : 'False', lastTransitionTime: readyAt as unknown as Date }],
    containerStatuses: [{ name: 'app', image: 'x', imageID: '', ready, restartCount: 0, state: { running: {} } }],
  },
});

test('startup is creation to the Ready transition, only once the pod runs', () => {
  assert.deepEqual(podStartup(pod(true)), { seconds: 7, readyAt: Date.parse('2026-01-01T00:00:07Z') });
  assert.equal(podStartup(pod(false)), null, 'not running yet');
  assert.equal(podStartup({ ...pod(true), metadata: { name: 'x' } }), null, 'no creation time');
  assert.equal(podStartup(pod(true, '2025-12-31T23:59:59Z'))!.seconds, 0, 'clock skew never goes negative');
});

const { api } = await startSim(30);
const ref = (id: string) => ({ type: 'deployment_topology' as const, id, region: 'us-east-1' });
const sink: StatusSink = { instance: () => {}, sentinel: () => {}, apply: () => {}, gc: () => {} };

test('the watcher observes each new pod once when it becomes running, and ignores pods that ran before it started', async () => {
  const ctl = controller(api);
  await ctl.apply(ref('dep-before'), deploymentState({ deploymentId: 'dep-before', replicas: 1 }));
  const first: number[] = [];
  const w1 = new InstanceStatusWatcher({ api, namespace: 'unkey', sink, logger, relistIntervalMs: 60_000, onStartup: (s) => first.push(s) });
  w1.start();
  await until(() => first.length === 1);
  await w1.stop();
  // Well past the slack, so dep-before's Ready transition is older than the next watcher (the
  // rule is in wall-clock time: the clock has to move).
  await pause(1_200);

  const seen: number[] = [];
  const reported: string[] = [];
  const w2 = new InstanceStatusWatcher({
    api,
    namespace: 'unkey',
    sink: { ...sink, instance: (r) => reported.push(r.podName) },
    logger,
    relistIntervalMs: 60_000,
    minBackoffMs: 10,
    onStartup: (s) => seen.push(s),
  });
  w2.start();
  try {
    await until(() => w2.reflector.hasSynced);
    await ctl.apply(ref('dep-new'), deploymentState({ deploymentId: 'dep-new', replicas: 2 }));
    await until(() => seen.length === 2);
    // A relist re-emits every pod; none counts again. Wait for proof that it ran: a list started
    // after relistNow() and the watch it opens once the list is done (counted only after every
    // listed pod went through the watcher), and every pod reported again, not for time to pass.
    const { lists, watches } = w2.reflector.counters;
    const from = reported.length;
    w2.reflector.relistNow();
    await until(() => w2.reflector.counters.lists > lists && w2.reflector.counters.watches > watches);
    const pods = [...w2.reflector.store.values()].map((p) => p.metadata!.name!).sort();
    assert.equal(pods.length, 3, 'dep-before and dep-new pods are all in the copy');
    assert.deepEqual([...new Set(reported.slice(from))].sort(), pods, 'the relist re-reported every pod');
    assert.equal(seen.length, 2, 'two new pods, counted once each; the pod running before the watcher is not counted');
    for (const s of seen) assert.ok(s >= 0 && s < 10, `startup ${s}s`);
  } finally {
    await w2.stop();
  }
});

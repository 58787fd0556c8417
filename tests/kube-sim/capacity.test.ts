// Nodes that run out of room (seed 001's "Failed: resource limits"): with the `nodes` option,
// pods take what they request from the node they are bound to; a pod no node has room for stays
// Pending with PodScheduled=False (Unschedulable) and a FailedScheduling event, both in
// kube-scheduler's words, and is bound as soon as a pod leaving a node makes room. Read with
// the unchanged client and with the real kubectl.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fitErrorMessage, kubeconfigYaml } from '../../src/kube-sim';
import { insufficient } from '../../src/kube-sim/workloads/scheduler';
import { startSim, statefulSet, waitFor, type SimFixture } from './helpers';

test('the scheduler\'s message: a histogram of reasons over the nodes, sorted as text, and the preemption part', () => {
  assert.equal(
    fitErrorMessage([['Insufficient cpu']]),
    '0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod..',
  );
  assert.equal(
    fitErrorMessage([['Insufficient cpu'], ['Insufficient cpu', 'Insufficient memory'], ['Insufficient memory']]),
    '0/3 nodes are available: 2 Insufficient cpu, 2 Insufficient memory. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod..',
  );
  // sort.Strings on "<count> <reason>": "10 …" sorts before "2 …".
  const many = [...Array.from({ length: 10 }, () => ['Insufficient memory']), ['Insufficient cpu'], ['Insufficient cpu']];
  assert.match(fitErrorMessage(many), /^0\/12 nodes are available: 10 Insufficient memory, 2 Insufficient cpu\. /);
  assert.deepEqual(insufficient({ cpuMilli: 0, memoryBytes: 0 }, { cpuMilli: -1, memoryBytes: -1 }), [], 'a pod requesting nothing always fits');
  assert.deepEqual(insufficient({ cpuMilli: 500, memoryBytes: 1 }, { cpuMilli: 499, memoryBytes: 1 }), ['Insufficient cpu']);
});

let f: SimFixture;
let dir: string;
const GI = 1024 ** 3;
before(async () => {
  // One node of 1 CPU and 1 GiB.
  f = await startSim({ readyDelayMs: 5, nodes: { count: 1, cpuMilli: 1000, memoryBytes: GI } });
  dir = mkdtempSync(join(tmpdir(), 'kube-sim-capacity-'));
});
after(async () => {
  await f.close();
  rmSync(dir, { recursive: true, force: true });
});

function kubectl(...args: string[]): Promise<string> {
  const home = mkdtempSync(join(dir, 'home-'));
  const kubeconfig = join(home, 'kubeconfig');
  writeFileSync(kubeconfig, kubeconfigYaml(f.url));
  return new Promise((resolve, reject) =>
    execFile('/usr/bin/kubectl', args, { env: { PATH: process.env.PATH, HOME: home, KUBECONFIG: kubeconfig }, timeout: 60_000 }, (err, stdout, stderr) => (err ? reject(new Error(`kubectl ${args.join(' ')}: ${stderr}`)) : resolve(stdout))),
  );
}

const sized = (name: string, replicas: number, cpu: string, memory = '64Mi') => {
  const s = statefulSet(name, 'registry.local/app:v1', replicas);
  s.spec.template.spec.containers[0] = { ...s.spec.template.spec.containers[0]!, resources: { requests: { cpu, memory }, limits: { cpu, memory } } } as any;
  return s;
};
const pod = (name: string) => f.core.readNamespacedPod({ namespace: 'default', name });
const unscheduled = async (name: string) => (await pod(name)).status?.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');

test('a pod no node has room for stays Pending, Unschedulable, with FailedScheduling; freed room binds it', async () => {
  const ready = (name: string, n: number) => waitFor(`${name} ${n} ready`, async () => (await f.apps.readNamespacedStatefulSet({ namespace: 'default', name })).status?.readyReplicas === n);
  // 600m + 300m fit in 1000m; a second 300m does not.
  await f.objects.create(sized('filler', 1, '600m'));
  await ready('filler', 1);
  await f.objects.create(sized('busy', 2, '300m'));
  await ready('busy', 1);
  const cond = await waitFor('busy-1 unschedulable', () => unscheduled('busy-1'));
  const message = '0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod..';
  assert.equal(cond.reason, 'Unschedulable');
  assert.equal(cond.message, message);
  const pending = await pod('busy-1');
  assert.equal(pending.status?.phase, 'Pending');
  assert.equal(pending.spec?.nodeName, undefined, 'bound to no node');
  const events = await f.core.listNamespacedEvent({ namespace: 'default', fieldSelector: 'involvedObject.name=busy-1,reason=FailedScheduling' });
  assert.ok(events.items.length > 0 && events.items.every((e) => e.message === message && e.type === 'Warning'), JSON.stringify(events.items.map((e) => e.message)));
  // kubectl shows it as an operator sees it.
  const described = await kubectl('describe', 'pod', 'busy-1', '-n', 'default');
  assert.match(described, /FailedScheduling/);
  assert.match(described, /0\/1 nodes are available: 1 Insufficient cpu\./);
  // A pod that fits what is left is bound past the waiting one; the waiting one still waits.
  await f.objects.create(sized('small', 1, '100m'));
  await ready('small', 1);
  assert.ok(await unscheduled('busy-1'), 'still no room for 300m with 0m left');
  // The filler leaving makes room: the waiting pod is bound and runs.
  await f.objects.delete({ apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: 'filler', namespace: 'default' } } as any);
  await ready('busy', 2);
  assert.equal((await pod('busy-1')).spec?.nodeName, 'kube-sim-node-0');
  const info = f.sim.info() as { nodes: { limited: boolean; requested: { cpuMilli: number; pods: number }[] } };
  assert.deepEqual([info.nodes.limited, info.nodes.requested[0]!.cpuMilli, info.nodes.requested[0]!.pods], [true, 700, 3]);
});

test('memory counts too, and a pod larger than any node is told so by every node', async () => {
  await f.objects.create(sized('huge', 1, '100m', '2Gi'));
  const cond = await waitFor('huge-0 unschedulable', () => unscheduled('huge-0'));
  assert.equal(cond.message, '0/1 nodes are available: 1 Insufficient memory. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod..');
});

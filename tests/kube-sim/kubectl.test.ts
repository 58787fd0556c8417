// The real kubectl against a running kube-sim: get with its columns, describe with events, get
// events, get -w, scale (StatefulSet and Deployment), rollout status, apply --server-side (twice,
// the second a no-op), delete, logs, explain and Pod Security warnings. Each run gets a private HOME and KUBECONFIG, so no
// discovery or OpenAPI cache is shared between runs. kubectl must be on PATH (.ci/run installs
// it); without it these tests fail and say so.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { assertEvery } from '../helpers/assert';
import { execFile, spawn } from 'node:child_process';
import { accessSync, constants, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { kubeconfigYaml } from '../../src/kube-sim';
import { deployment, startSim, statefulSet, waitFor, type SimFixture } from './helpers';

/** Every kubectl run is bounded; a hung one fails the test instead of the suite. */
const KUBECTL_TIMEOUT_MS = 60_000;

function findKubectl(): string | undefined {
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    const p = join(dir, 'kubectl');
    try {
      accessSync(p, constants.X_OK);
      return p;
    } catch {
      // not in this directory
    }
  }
  return undefined;
}

const KUBECTL = findKubectl();
let f: SimFixture;
let dir: string;

before(async () => {
  f = await startSim({ readyDelayMs: 20 });
  dir = mkdtempSync(join(tmpdir(), 'kube-sim-kubectl-'));
});
after(async () => {
  await f.close();
  rmSync(dir, { recursive: true, force: true });
});

/** A fresh HOME and kubeconfig per run: kubectl caches discovery and OpenAPI under ~/.kube. */
function env(): NodeJS.ProcessEnv {
  const home = mkdtempSync(join(dir, 'home-'));
  const kubeconfig = join(home, 'kubeconfig');
  writeFileSync(kubeconfig, kubeconfigYaml(f.url));
  return { PATH: process.env.PATH, HOME: home, KUBECONFIG: kubeconfig };
}

function kubectl(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  if (!KUBECTL) assert.fail('kubectl is not installed (not found on PATH); .ci/run installs it with apt-get install kubectl');
  return new Promise((resolve) => {
    execFile(KUBECTL, args, { env: env(), timeout: KUBECTL_TIMEOUT_MS }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr });
    });
  });
}

async function ok(...args: string[]): Promise<string> {
  const r = await kubectl(...args);
  assert.equal(r.code, 0, `kubectl ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout;
}

const lines = (s: string) => s.trim().split('\n').map((l) => l.trim().split(/\s+/));

function manifest(obj: unknown): string {
  const p = join(dir, `m-${Math.random().toString(36).slice(2)}.json`);
  writeFileSync(p, JSON.stringify(obj));
  return p;
}

async function readyPods(prefix: string, n: number): Promise<void> {
  await waitFor(`${n} ready ${prefix} pods`, async () => {
    const pods = (await f.core.listNamespacedPod({ namespace: 'default' })).items.filter((p) => p.metadata!.name!.startsWith(prefix));
    return pods.length === n && pods.every((p) => p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
  }, 10_000);
}

test('apply --server-side twice: created, then the same again without a change', async () => {
  const file = manifest(statefulSet('web', 'nginx:1', 2));
  assert.match(await ok('apply', '--server-side', '-f', file), /statefulset.apps\/web serverside-applied/);
  const first = await f.apps.readNamespacedStatefulSet({ name: 'web', namespace: 'default' });
  const gen = first.metadata!.generation;
  assert.match(await ok('apply', '--server-side', '-f', file), /statefulset.apps\/web serverside-applied/);
  const second = await f.apps.readNamespacedStatefulSet({ name: 'web', namespace: 'default' });
  assert.equal(second.metadata!.generation, gen);
  assert.ok(second.metadata!.managedFields!.some((m) => m.manager === 'kubectl' && m.operation === 'Apply'));
});

/** A StatefulSet of the test's own, its pods ready (each test makes what it reads or changes,
 *  so the file's tests pass alone and in any order). */
async function readySts(name: string, replicas: number): Promise<void> {
  await f.objects.create(statefulSet(name, 'nginx:1', replicas) as any);
  await readyPods(`${name}-`, replicas);
}

test('get: pod columns READY/STATUS/RESTARTS, StatefulSet READY, wide columns', async () => {
  await readySts('cols', 2);
  const pods = lines(await ok('get', 'pods'));
  assert.deepEqual(pods[0], ['NAME', 'READY', 'STATUS', 'RESTARTS', 'AGE']);
  assert.deepEqual(pods.find((r) => r[0] === 'cols-0')!.slice(1, 4), ['1/1', 'Running', '0']);
  await waitFor('sts 2/2', async () => lines(await ok('get', 'statefulset', 'cols'))[1]![1] === '2/2', 10_000);
  assert.deepEqual(lines(await ok('get', 'sts'))[0], ['NAME', 'READY', 'AGE']);
  const wide = lines(await ok('get', 'pods', '-o', 'wide'));
  assert.deepEqual(wide[0]!.slice(5, 7), ['IP', 'NODE']);
  assert.match(wide.find((r) => r[0] === 'cols-0')![6]!, /^kube-sim-node-/);
});

test('describe pod shows its events', async () => {
  await readySts('described', 1);
  const out = await waitFor('the pod\'s events described', async () => {
    const o = await ok('describe', 'pod', 'described-0');
    return /Normal\s+Started\s/.test(o) ? o : undefined;
  });
  assert.match(out, /Events:/);
  for (const reason of ['Scheduled', 'Pulling', 'Pulled', 'Created', 'Started']) assert.match(out, new RegExp(`Normal\\s+${reason}\\s`), reason);
  assert.match(out, /Successfully assigned default\/described-0 to kube-sim-node-/);
});

test('get events: a pod\'s lifecycle events (Scheduled, Pulled, Created, Started) with their columns', async () => {
  await f.objects.create(statefulSet('ev', 'nginx:1', 1) as any);
  await readyPods('ev-', 1);
  const reasons = ['Scheduled', 'Pulled', 'Created', 'Started'];
  /** REASON of each row about pod/ev-0 (columns: LAST SEEN, TYPE, REASON, OBJECT, MESSAGE). */
  const about = (out: string) => lines(out).slice(1).filter((r) => r[3] === 'pod/ev-0');
  // The events are recorded as the pod starts; wait until kubectl lists every one of them.
  const out = await waitFor('the pod\'s lifecycle events', async () => {
    const o = await ok('get', 'events');
    return reasons.every((reason) => about(o).some((r) => r[2] === reason)) ? o : undefined;
  }, 10_000);
  assert.deepEqual(lines(out)[0], ['LAST', 'SEEN', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE']);
  for (const r of about(out)) assert.equal(r[1], 'Normal', r.join(' '));
  assert.match(out, /Scheduled\s+pod\/ev-0\s+Successfully assigned default\/ev-0 to kube-sim-node-/);
  assert.match(out, /Pulled\s+pod\/ev-0\s+Successfully pulled image "nginx:1"/);
  // A field selector narrows the list to the pod's own events.
  const own = lines(await ok('get', 'events', '--field-selector', 'involvedObject.name=ev-0')).slice(1);
  assert.ok(own.length >= reasons.length, own.map((r) => r.join(' ')).join('\n'));
  assertEvery(own, (r) => r[3] === 'pod/ev-0', own.map((r) => r.join(' ')).join('\n'));
});

test('scale and get -w: the watch sees the new READY count arrive', async () => {
  assert.ok(KUBECTL, 'kubectl is not installed (not found on PATH); .ci/run installs it with apt-get install kubectl');
  await readySts('watched', 2);
  const watcher = spawn(KUBECTL, ['get', 'sts', 'watched', '-w'], { env: env() });
  let out = '';
  watcher.stdout.on('data', (c) => (out += String(c)));
  const killer = setTimeout(() => watcher.kill('SIGKILL'), KUBECTL_TIMEOUT_MS);
  try {
    await waitFor('watch header and row', () => /watched\s+2\/2/.test(out), 20_000);
    assert.match(await ok('scale', 'statefulset', 'watched', '--replicas=3'), /statefulset.apps\/watched scaled/);
    await waitFor('3/3 seen by the watch', () => /watched\s+3\/3/.test(out), 20_000);
  } finally {
    clearTimeout(killer);
    watcher.kill();
  }
  assert.equal((await f.apps.readNamespacedStatefulSet({ name: 'watched', namespace: 'default' })).spec!.replicas, 3);
});

test('scale deployment: spec.replicas changes and the pods follow, up and down', async () => {
  await f.objects.create(deployment('scaled', 'nginx:1', 1) as any);
  await readyPods('scaled-', 1);
  assert.match(await ok('scale', 'deployment', 'scaled', '--replicas=3'), /deployment.apps\/scaled scaled/);
  assert.equal((await f.apps.readNamespacedDeployment({ name: 'scaled', namespace: 'default' })).spec!.replicas, 3);
  await readyPods('scaled-', 3);
  await waitFor('deployment 3/3', async () => lines(await ok('get', 'deployment', 'scaled'))[1]![1] === '3/3', 10_000);
  assert.match(await ok('scale', 'deployment/scaled', '--replicas=1'), /deployment.apps\/scaled scaled/);
  assert.equal((await f.apps.readNamespacedDeployment({ name: 'scaled', namespace: 'default' })).spec!.replicas, 1);
  await readyPods('scaled-', 1);
  await waitFor('deployment 1/1', async () => lines(await ok('get', 'deployment', 'scaled'))[1]![1] === '1/1', 10_000);
});

test('rollout status: StatefulSet and Deployment, after an image change', async () => {
  await readySts('rolled', 2);
  await f.apps.patchNamespacedStatefulSet({ name: 'rolled', namespace: 'default', body: [{ op: 'replace', path: '/spec/template/spec/containers/0/image', value: 'nginx:2' }] });
  const sts = await ok('rollout', 'status', 'statefulset/rolled', '--timeout=50s');
  assert.match(sts, /roll(ing update| out) complete/);
  await f.objects.create(deployment('api', 'nginx:1', 2) as any);
  const dep = await ok('rollout', 'status', 'deployment/api', '--timeout=50s');
  assert.match(dep, /deployment "api" successfully rolled out/);
});

test('logs: a crash image logs why it crashed', async () => {
  await f.objects.create(statefulSet('boom', 'registry/app:crash', 1) as any);
  await waitFor('a crash', async () => (await f.core.readNamespacedPod({ name: 'boom-0', namespace: 'default' })).status?.containerStatuses?.[0]?.lastState?.terminated, 10_000);
  assert.match(await ok('logs', 'boom-0'), /fatal: exiting with code 1: the image registry\/app:crash is built to crash/);
  assert.match(await ok('logs', 'boom-0', '--previous', '--tail=1'), /built to crash/);
  const listed = lines(await ok('get', 'pod', 'boom-0'));
  assert.equal(listed[1]![2], 'CrashLoopBackOff');
});

test('delete: the object and its pods go', async () => {
  await readySts('doomed', 1);
  assert.match(await ok('delete', 'statefulset', 'doomed'), /statefulset.apps "doomed" deleted/);
  const r = await kubectl('get', 'statefulset', 'doomed');
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /NotFound|not found/);
  await waitFor('pods gone', async () => (await f.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=doomed' })).items.length === 0);
});

test('explain: fields and descriptions from the served OpenAPI v3, of the release /version names', async () => {
  const version = JSON.parse(await ok('version', '-o', 'json')) as { serverVersion: { gitVersion: string } };
  assert.match(version.serverVersion.gitVersion, /^v1\.31\./);
  const ordinals = await ok('explain', 'statefulset.spec.ordinals');
  assert.match(ordinals, /FIELD: ordinals <StatefulSetOrdinals>/);
  assert.match(ordinals, /start\t<integer>\n\s+start is the number representing the first replica's index/);
  // allocatedResourcesStatus is new in 1.31: only a current spec has it.
  assert.match(await ok('explain', 'pod.status.containerStatuses.allocatedResourcesStatus'), /FIELD: allocatedResourcesStatus <\[\]ResourceStatus>/);
  const r = await kubectl('explain', 'pod.spec.noSuchField');
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /field "noSuchField" does not exist/);
});

test('Pod Security warn: kubectl prints the Warning header on stderr, and the object is created', async () => {
  f.sim.applyManifests([{ apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'warned', labels: { 'pod-security.kubernetes.io/warn': 'restricted' } } }]);
  const file = manifest({ apiVersion: 'v1', kind: 'Pod', metadata: { name: 'rooty', namespace: 'warned' }, spec: { containers: [{ name: 'c', image: 'nginx:1' }] } });
  const r = await kubectl('create', '-f', file);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /pod\/rooty created/);
  assert.equal(
    r.stderr.trim(),
    'Warning: would violate PodSecurity "restricted:latest": allowPrivilegeEscalation != false (container "c" must set securityContext.allowPrivilegeEscalation=false), ' +
      'unrestricted capabilities (container "c" must set securityContext.capabilities.drop=["ALL"]), runAsNonRoot != true (pod or container "c" must set securityContext.runAsNonRoot=true), ' +
      'seccompProfile (pod or container "c" must set securityContext.seccompProfile.type to "RuntimeDefault" or "Localhost")',
  );
});

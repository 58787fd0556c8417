// `npm run bench:drift`: how fast krane heals drift. The simulator runs in a child process
// (bench/_kube-sim-child.ts); krane's ApplyController and drift watch run here against it, as
// in krane. It applies a few deployments, sentinels and routes tables, then makes CHANGES hand
// changes of mixed kinds one after another, each as an operator's tool would send it: the
// scale subresource, a full update (kubectl edit), a strategic patch of the image (kubectl set
// image), a label removed (JSON patch), a merge patch and a server-side apply by other field
// managers, a Service and a ConfigMap edited, an object deleted. For each, the time from the
// change's response to the object back as desired (read every POLL_MS).
// Prints one JSON object on the last line: p50, p99 and max in ms, overall and per kind.
// CHANGES = BENCH_DRIFT_CHANGES (default 50).
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { KubeConfig, PatchStrategy, type KubernetesObject } from '@kubernetes/client-node';
import { KubeClient } from '../src/kube/client';
import { SIM_TOKEN } from '../src/kube-sim';
import { ApplyController } from '../src/kube/apply-controller';
import { DriftWatch } from '../src/kube/drift';
import { routesObjectName } from '../src/kube/manifests';
import { createLogger } from '../src/log';
import type { ApplyState, DeploymentApply, ResourceRef, RoutesApply, SentinelApply } from '../src/sync/wire';

const CHANGES = Number(process.env.BENCH_DRIFT_CHANGES ?? 50);
/** Fine enough against a 2 s budget, coarse enough not to load the simulator. */
const POLL_MS = 10;
const REGION = 'us-east-1';
const scope = { workspaceId: 'ws-b', projectId: 'prj-b', appId: 'app-b', environmentId: 'env-b' };

const child = spawn(process.execPath, ['--import', 'tsx', new URL('./_kube-sim-child.ts', import.meta.url).pathname], { stdio: ['ignore', 'pipe', 'inherit'], env: { ...process.env, READY_DELAY_MS: '20' } });
const url: string = await new Promise((resolve, reject) => {
  createInterface(child.stdout!).once('line', resolve);
  child.once('exit', (code) => reject(new Error(`kube-sim exited with ${code}`)));
});

const kc = new KubeConfig();
kc.loadFromOptions({ clusters: [{ name: 'sim', server: url, skipTLSVerify: true }], users: [{ name: 'sim', token: SIM_TOKEN }], contexts: [{ name: 'sim', cluster: 'sim', user: 'sim' }], currentContext: 'sim' });
const api = new KubeClient(kc);
const other = new KubeClient(kc);
const logger = createLogger('warn');
const ctl = new ApplyController({ api, region: REGION, logger, verifyAfterMs: 10 * 60_000 });
const drift = new DriftWatch({ api, controller: ctl, logger, relistIntervalMs: 10 * 60_000 });

const dep = (i: number): DeploymentApply => ({ action: 'apply', kind: 'deployment', deploymentId: `dep-bench-${i}`, ...scope, region: REGION, namespace: 'unkey', image: 'registry.example/app:v1', replicas: 2, cpuMillicores: 100, memoryMib: 128, port: 8080, command: [], env: { A: '1' } });
const snt = (i: number): SentinelApply => ({ action: 'apply', kind: 'sentinel', sentinelId: `snt-bench-${i}`, ...scope, environmentId: `env-b${i}`, region: REGION, namespace: 'sentinel', image: 'registry.example/sentinel:v1', replicas: 2, cpuMillicores: 100, memoryMib: 128, specHash: 'h' });
const routes: RoutesApply = { action: 'apply', kind: 'environment_routes', ...scope, region: REGION, namespace: 'sentinel', hostname: 'b.example', backends: [{ deploymentId: 'dep-bench-0', weight: 100, replicas: 2 }] };

const sts = (i: number) => ({ apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: 'unkey', name: `dep-bench-${i}` });
const deployment = (i: number) => ({ apiVersion: 'apps/v1', kind: 'Deployment', namespace: 'sentinel', name: `snt-bench-${i}` });
const svc = (i: number) => ({ apiVersion: 'v1', kind: 'Service', namespace: 'unkey', name: `dep-bench-${i}` });
const cm = { apiVersion: 'v1', kind: 'ConfigMap', namespace: 'sentinel', name: routesObjectName(scope.environmentId) };
const read = async (r: { apiVersion: string; kind: string; namespace: string; name: string }) => (await api.get(r)) as any;
const patch = (o: object, type: string, manager = 'bench-intruder') => other.objects.patch(o as KubernetesObject, undefined, undefined, manager, undefined, type as PatchStrategy);
const meta = (r: { apiVersion: string; kind: string; namespace: string; name: string }) => ({ apiVersion: r.apiVersion, kind: r.kind, metadata: { name: r.name, namespace: r.namespace } });

interface Change {
  kind: string;
  make(i: number): Promise<unknown>;
  healed(i: number, before: any): Promise<boolean>;
  target(i: number): { apiVersion: string; kind: string; namespace: string; name: string };
}

const CHANGE_KINDS: Change[] = [
  {
    kind: 'scale-subresource',
    target: sts,
    make: (i) => fetch(`${url}/apis/apps/v1/namespaces/unkey/statefulsets/dep-bench-${i}/scale?fieldManager=kubectl-scale`, { method: 'PATCH', headers: { authorization: `Bearer ${SIM_TOKEN}`, 'content-type': 'application/merge-patch+json' }, body: JSON.stringify({ spec: { replicas: 5 } }) }).then(ok),
    healed: async (i) => (await read(sts(i))).spec.replicas === 2,
  },
  {
    kind: 'update',
    target: sts,
    make: async (i) => {
      const live = await read(sts(i));
      live.spec.template.spec.terminationGracePeriodSeconds = 77;
      return other.objects.replace(live);
    },
    healed: async (i) => (await read(sts(i))).spec.template.spec.terminationGracePeriodSeconds !== 77,
  },
  {
    kind: 'set-image',
    target: sts,
    make: (i) => patch({ ...meta(sts(i)), spec: { template: { spec: { containers: [{ name: 'app', image: 'evil:v9' }] } } } }, PatchStrategy.StrategicMergePatch),
    healed: async (i) => (await read(sts(i))).spec.template.spec.containers[0].image === 'registry.example/app:v1',
  },
  {
    kind: 'label-removed',
    target: sts,
    make: (i) => fetch(`${url}/apis/apps/v1/namespaces/unkey/statefulsets/dep-bench-${i}?fieldManager=kubectl-label`, { method: 'PATCH', headers: { authorization: `Bearer ${SIM_TOKEN}`, 'content-type': 'application/json-patch+json' }, body: JSON.stringify([{ op: 'remove', path: '/metadata/labels/unkey.com~1app.id' }]) }).then(ok),
    healed: async (i) => (await read(sts(i))).metadata.labels['unkey.com/app.id'] === scope.appId,
  },
  {
    kind: 'merge-patch',
    target: deployment,
    make: (i) => patch({ ...meta(deployment(i)), spec: { replicas: 0 } }, PatchStrategy.MergePatch),
    healed: async (i) => (await read(deployment(i))).spec.replicas === 2,
  },
  {
    kind: 'apply-other-manager',
    target: deployment,
    make: (i) => other.objects.patch({ ...meta(deployment(i)), spec: { minReadySeconds: 60 } } as KubernetesObject, undefined, undefined, 'bench-intruder', true, PatchStrategy.ServerSideApply),
    healed: async (i) => (await read(deployment(i))).spec.minReadySeconds === 5,
  },
  {
    kind: 'service-edit',
    target: svc,
    make: (i) => patch({ ...meta(svc(i)), spec: { publishNotReadyAddresses: false } }, PatchStrategy.MergePatch),
    healed: async (i) => (await read(svc(i))).spec.publishNotReadyAddresses === true,
  },
  {
    kind: 'configmap-edit',
    target: () => cm,
    make: async () => {
      const live = await read(cm);
      const key = Object.keys(live.data)[0]!;
      return patch({ ...meta(cm), data: { [key]: 'tampered' } }, PatchStrategy.MergePatch);
    },
    healed: async () => !Object.values((await read(cm)).data).includes('tampered'),
  },
  {
    kind: 'delete',
    target: sts,
    make: (i) => other.delete(sts(i)),
    healed: async (i, before) => {
      const s = await read(sts(i));
      return Boolean(s && s.metadata.uid !== before.metadata.uid);
    },
  },
];

async function ok(r: Response): Promise<void> {
  const text = await r.text();
  if (!r.ok) throw new Error(`change refused (${r.status}): ${text}`);
}

function pct(list: number[], p: number): number {
  const s = [...list].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.ceil((p / 100) * s.length) - 1)] ?? 0;
}

try {
  drift.start();
  while (!drift.hasSynced) await new Promise((r) => setTimeout(r, 20));
  const N = 6;
  const states: [ResourceRef, ApplyState][] = [];
  for (let i = 0; i < N; i++) {
    states.push([{ type: 'deployment_topology', id: `dep-bench-${i}`, region: REGION }, dep(i)]);
    states.push([{ type: 'sentinel', id: `snt-bench-${i}`, region: REGION }, snt(i)]);
  }
  states.push([{ type: 'environment_routes', id: scope.environmentId, region: REGION }, routes]);
  for (const [ref, s] of states) await ctl.apply(ref, s);

  const times: { kind: string; ms: number }[] = [];
  for (let n = 0; n < CHANGES; n++) {
    const c = CHANGE_KINDS[n % CHANGE_KINDS.length]!;
    const i = Math.floor(n / CHANGE_KINDS.length) % N;
    const before = await read(c.target(i));
    // Nothing pending from the last change, so each measurement is one change alone.
    while (ctl.repairsPending > 0) await new Promise((r) => setTimeout(r, POLL_MS));
    await c.make(i);
    const changedAt = performance.now();
    const deadline = changedAt + 30_000;
    while (!(await c.healed(i, before).catch(() => false))) {
      if (performance.now() > deadline) throw new Error(`${c.kind} on ${i} not healed within 30 s`);
      await new Promise((r) => setTimeout(r, POLL_MS));
    }
    times.push({ kind: c.kind, ms: Math.round(performance.now() - changedAt) });
  }
  const all = times.map((t) => t.ms);
  const byKind = Object.fromEntries(CHANGE_KINDS.map((k) => {
    const l = times.filter((t) => t.kind === k.kind).map((t) => t.ms);
    return [k.kind, { n: l.length, p50: pct(l, 50), max: Math.max(...l) }];
  }));
  console.log(JSON.stringify({ bench: 'drift', changes: times.length, pollMs: POLL_MS, p50Ms: pct(all, 50), p99Ms: pct(all, 99), maxMs: Math.max(...all), repairs: ctl.drift.snapshot().byKind, byKind }));
} finally {
  ctl.close();
  await drift.stop();
  child.kill('SIGTERM');
}

// The drift property (issue 33): any sequence of kubectl-like edits to krane's objects (scale,
// set image, label, annotate, delete, a patch of a field krane does not own) while the
// HorizontalPodAutoscaler scales: after each edit krane's objects converge to desired, the
// fields other managers own are kept, krane_drift_repairs_total counts exactly the objects it
// had to put back (none for another manager's field or the autoscaler's count), and once the
// resources are stopped nothing of them is left, pods included.
//
// Each sequence runs on fresh resources of one kube-sim (an autoscaled deployment, a fixed one,
// a sentinel and an environment's routes) against an ApplyController with its drift watch, as
// krane runs them. Edits are the requests kubectl makes (merge and strategic patches under their
// own field managers, deletes) through the unchanged client; tests/kube/drift-kinds.test.ts
// makes each kind of edit with the real kubectl. The autoscaler is kube-sim's, synced by the
// sequence itself (an `hpa` step), so its scaling is ordered among the edits, not raced.
// Every order is made: after each edit the test waits until the drift watch has seen it and no
// repair is pending, then checks.
//
// Seeded and replayable: FC_SEED=<seed> FC_PATH=<path> node --import tsx tests/run.ts
// tests/model/drift-property.test.ts. FC_NUM_RUNS sequences (6 here), FC_MAX_COMMANDS edits each
// (6 here); the long run: FC_NUM_RUNS=300 FC_MAX_COMMANDS=12 node --import tsx tests/run.ts
// tests/model/drift-property.test.ts
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { PatchStrategy, type KubernetesObject } from '@kubernetes/client-node';
import { KubeSim, DEFAULT_SIM_OPTIONS, mustResourceForKind } from '../../src/kube-sim';
import { KubeClient } from '../../src/kube/client';
import { DriftWatch } from '../../src/kube/drift';
import { firstDifference } from '../../src/kube/drift-check';
import { buildObjects, type ManifestObject } from '../../src/kube/manifests';
import { objectKey } from '../../src/kube/manifests/types';
import { isKranes } from '../../src/kube/ownership';
import { managedKinds } from '../../src/kube/objects';
import type { ApplyState, ResourceRef } from '../../src/sync/wire';
import { controller, logger, until } from '../kube/helpers';
import { deploymentState, routesState, sentinelState } from '../kube/fixtures';
import { editArb, expectedRepairs, foreignField, ForeignFields, imageEdit, metadataEdit, metadataPath, targetsFor, type Edit, type Target } from './drift-model';

const NUM_RUNS = Number(process.env.FC_NUM_RUNS ?? 6);
const MAX_COMMANDS = Number(process.env.FC_MAX_COMMANDS ?? 6);
/** A safety net for every wait below, never the thing tested: generous for a loaded machine. */
const WAIT_MS = 20_000;

// The autoscaler syncs only when a sequence says so: its timer is pushed out of the way.
const sim = new KubeSim({ readyDelayMs: 5, minReadyScale: 0.001, hpaSyncMs: 3_600_000, namespaces: [...DEFAULT_SIM_OPTIONS.namespaces, 'unkey', 'sentinel'] });
await sim.listen(0);
const api = new KubeClient(sim.kubeConfig());
const ctl = controller(api);
const drift = new DriftWatch({ api, controller: ctl, logger, relistIntervalMs: 600_000 });
drift.start();
after(async () => {
  ctl.close();
  await drift.stop();
  await sim.close();
});
await until(() => drift.hasSynced, WAIT_MS);

interface Resource {
  ref: ResourceRef;
  state: ApplyState;
}

function resources(run: number): Resource[] {
  const region = 'us-east-1';
  const env = `env-dr${run}`;
  const r = (type: ResourceRef['type'], id: string): ResourceRef => ({ type, id, region });
  return [
    { ref: r('deployment_topology', `dep-dra${run}`), state: deploymentState({ deploymentId: `dep-dra${run}`, environmentId: env, image: 'registry.example/app:cpuhot-1', replicas: 2, autoscaling: { minReplicas: 2, maxReplicas: 4, cpuUtilization: 50 } }) },
    { ref: r('deployment_topology', `dep-drf${run}`), state: deploymentState({ deploymentId: `dep-drf${run}`, environmentId: env, replicas: 2 }) },
    { ref: r('sentinel', `snt-drs${run}`), state: sentinelState({ sentinelId: `snt-drs${run}`, environmentId: env, image: 'ghcr.io/unkeyed/sentinel:v1', replicas: 2 }) },
    { ref: r('environment_routes', env), state: routesState({ environmentId: env }) },
  ];
}

const refOf = (o: ManifestObject) => ({ apiVersion: o.apiVersion, kind: o.kind, namespace: o.metadata.namespace, name: o.metadata.name });
const live = (o: ManifestObject) => api.get(refOf(o)) as Promise<Record<string, any> | undefined>;
const reflector = (o: ManifestObject) => drift.reflectors[`${o.kind}/${o.metadata.namespace}`]!;

function targetsOf(rs: Resource[]): Target[] {
  return rs.flatMap((r) => {
    const objects = buildObjects(r.state);
    const hpa = objects.find((o) => o.kind === 'HorizontalPodAutoscaler');
    const floor = (hpa?.spec as { minReplicas?: number } | undefined)?.minReplicas;
    return objects.map((desired) => ({ desired, ...(desired.kind === 'StatefulSet' && floor !== undefined ? { floor } : {}) }));
  });
}

/** The drift watch has seen `o` at `rv` or later (or, with `uid`, an incarnation other than it). */
async function seen(o: ManifestObject, rv: number, goneUid?: string): Promise<void> {
  const key = `${o.metadata.namespace}/${o.metadata.name}`;
  await until(() => {
    const got = reflector(o).store.get(key);
    if (goneUid !== undefined) return got !== undefined && got.metadata?.uid !== goneUid;
    return got !== undefined && Number(got.metadata?.resourceVersion) >= rv;
  }, WAIT_MS);
  await until(() => ctl.repairsPending === 0, WAIT_MS);
}

/** Makes the edit as kubectl would; returns what the drift watch must have seen afterwards. */
async function perform(edit: Edit, t: Target | undefined, foreign: ForeignFields): Promise<() => Promise<void>> {
  if (edit.op === 'hpa') return hpaStep(edit.load);
  const o = t!.desired;
  const patch = (body: Record<string, unknown>, manager: string, strategy: PatchStrategy = PatchStrategy.MergePatch) =>
    api.objects.patch({ apiVersion: o.apiVersion, kind: o.kind, ...body, metadata: { ...(body.metadata as object), name: o.metadata.name, namespace: o.metadata.namespace } } as KubernetesObject, undefined, undefined, manager, undefined, strategy);
  const done = (r: KubernetesObject) => () => seen(o, Number(r.metadata?.resourceVersion));
  switch (edit.op) {
    case 'scale':
      return done(await patch({ spec: { replicas: edit.replicas } }, 'kubectl-scale'));
    case 'image':
      return done(await patch(imageEdit(edit, t!), 'kubectl-set', PatchStrategy.StrategicMergePatch));
    case 'label':
    case 'annotate': {
      const { key, patch: body } = metadataEdit(edit, t!);
      const mine = key in t!.desired.metadata[edit.op === 'label' ? 'labels' : 'annotations'];
      if (!mine) foreign.set(objectKey(o), metadataPath(edit.op, key), edit.value);
      return done(await patch(body, edit.op === 'label' ? 'kubectl-label' : 'kubectl-annotate'));
    }
    case 'foreign-field': {
      const f = foreignField(o.kind, edit.value);
      foreign.set(objectKey(o), f.path, f.value);
      return done(await patch(f.patch, 'intruder'));
    }
    case 'delete': {
      const uid = (await live(o))!.metadata.uid as string;
      await api.delete(refOf(o));
      foreign.deleted(objectKey(o));
      return () => seen(o, 0, uid);
    }
  }
}

/** The autoscaled StatefulSets of the current sequence (their load and syncs). */
let autoscaled: ManifestObject[] = [];
const STS = mustResourceForKind('apps/v1', 'StatefulSet');

/** The autoscaler's load goes hot or cold and it syncs once, now. */
function hpaStep(load: 'hot' | 'cold'): () => Promise<void> {
  for (const s of autoscaled) sim.autoscalers.setLoad(s.metadata.namespace, s.metadata.name, load === 'hot' ? 0.95 : 0.05);
  sim.autoscalers.syncNow();
  const rvs = autoscaled.map((s) => ({ s, rv: Number(sim.api.tryGet(STS, s.metadata.namespace, s.metadata.name)?.metadata.resourceVersion ?? 0) }));
  return async () => {
    for (const { s, rv } of rvs) await seen(s, rv);
  };
}

/** Why the objects are not as desired (empty: converged), and which foreign values are gone. */
async function divergence(targets: Target[], foreign: ForeignFields): Promise<string[]> {
  const out: string[] = [];
  for (const t of targets) {
    const o = t.desired;
    const l = await live(o);
    const name = `${o.kind} ${o.metadata.name}`;
    if (!l) {
      out.push(`${name}: missing`);
      continue;
    }
    for (const field of ['labels', 'annotations'] as const) {
      for (const [k, v] of Object.entries(o.metadata[field])) if (l.metadata?.[field]?.[k] !== v) out.push(`${name}: ${field} ${k}`);
    }
    for (const [field, want] of Object.entries(o)) {
      if (['apiVersion', 'kind', 'metadata'].includes(field)) continue;
      const d = firstDifference(want, l[field], field);
      if (d) out.push(`${name}: ${d}`);
    }
    if (t.floor !== undefined && (l.spec?.replicas ?? 1) < t.floor) out.push(`${name}: replicas ${l.spec?.replicas} below ${t.floor}`);
    for (const m of foreign.missing(objectKey(o), l)) out.push(`${name}: another manager's ${m} lost`);
  }
  return out;
}

/** After stop: no object of the sequence's resources is left, and no pod of them. */
async function leftovers(rs: Resource[]): Promise<string[]> {
  const ids = rs.map((r) => r.ref.id);
  const out: string[] = [];
  for (const k of managedKinds()) {
    for (const o of (await api.list(k.apiVersion, k.kind, k.namespace)).items) {
      const text = JSON.stringify(o.metadata?.labels ?? {}) + (o.metadata?.name ?? '');
      if (ids.some((id) => text.includes(id)) && isKranes(o)) out.push(`${k.kind} ${o.metadata?.name}`);
    }
  }
  for (const ns of ['unkey', 'sentinel']) {
    for (const p of (await api.list('v1', 'Pod', ns)).items) if (ids.some((id) => JSON.stringify(p.metadata?.labels ?? {}).includes(id))) out.push(`Pod ${p.metadata?.name}`);
  }
  return out;
}

let runs = 0;
let edits = 0;

test('drift: any kubectl-like edits while the autoscaler scales converge, keep others\' fields, are counted exactly, and leave nothing after stop', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(editArb, { minLength: 1, maxLength: MAX_COMMANDS }), async (sequence) => {
      const run = runs++;
      const rs = resources(run);
      const targets = targetsOf(rs);
      autoscaled = targets.filter((t) => t.floor !== undefined).map((t) => t.desired);
      const foreign = new ForeignFields();
      for (const r of rs) await ctl.apply(r.ref, r.state);
      // Pods of the autoscaled one Ready: the autoscaler has CPU figures to act on.
      await until(async () => (await live(autoscaled[0]!))?.status?.readyReplicas === 2, WAIT_MS);
      for (const t of targets) await seen(t.desired, 0);
      try {
        for (const edit of sequence) {
          edits++;
          const pool = targetsFor(edit, targets);
          const t = 'target' in edit ? pool[edit.target % pool.length] : undefined;
          const before = t ? await live(t.desired) : undefined;
          const repaired = ctl.drift.snapshot().repaired;
          const settled = await perform(edit, t, foreign);
          await settled();
          const step = `${JSON.stringify(edit)} on ${t ? `${t.desired.kind} ${t.desired.metadata.name}` : 'the autoscaler'}`;
          assert.equal(ctl.drift.snapshot().repaired - repaired, expectedRepairs(edit, t, before), `repairs counted after ${step}`);
          assert.deepEqual(await divergence(targets, foreign), [], `converged after ${step}`);
        }
      } finally {
        for (const r of rs) await ctl.delete(r.ref);
      }
      await until(async () => (await leftovers(rs)).length === 0, WAIT_MS).catch(async () => assert.deepEqual(await leftovers(rs), [], 'nothing left after stop'));
      // And the drift watch brings none of it back.
      await until(() => ctl.repairsPending === 0, WAIT_MS);
      assert.deepEqual(await leftovers(rs), [], 'nothing brought back after stop');
    }),
    {
      numRuns: NUM_RUNS,
      ...(process.env.FC_SEED ? { seed: Number(process.env.FC_SEED) } : {}),
      ...(process.env.FC_PATH ? { path: process.env.FC_PATH } : {}),
    },
  );
  console.log(JSON.stringify({ driftProperty: { sequences: runs, edits } }));
  assert.ok(runs >= NUM_RUNS && edits > 0);
});

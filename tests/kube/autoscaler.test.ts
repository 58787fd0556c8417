// The autoscaled deployment's objects (issue 25): an autoscaling/v2 HorizontalPodAutoscaler that
// passes the official schema, aimed at the StatefulSet, whose manifest then leaves replicas out.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { validateManifest } from '../helpers/manifests';
import { buildObjects, LABEL, SCALE_DOWN_STABILIZATION_SECONDS } from '../../src/kube/manifests';
import { deploymentState } from './fixtures';

test('an autoscaled deployment gets a valid HPA for its StatefulSet, and the StatefulSet carries no replicas', () => {
  const objs = buildObjects(deploymentState({ replicas: 2, autoscaling: { minReplicas: 2, maxReplicas: 6, cpuUtilization: 65 } }));
  assert.deepEqual(objs.map((o) => o.kind), ['Service', 'StatefulSet', 'HorizontalPodAutoscaler']);
  const [, sts, hpa] = objs as [unknown, any, any];
  validateManifest(hpa);
  validateManifest(sts);
  assert.equal('replicas' in sts.spec, false, 'the autoscaler owns spec.replicas');
  assert.deepEqual(hpa.spec.scaleTargetRef, { apiVersion: 'apps/v1', kind: 'StatefulSet', name: sts.metadata.name });
  assert.equal(hpa.spec.minReplicas, 2);
  assert.equal(hpa.spec.maxReplicas, 6);
  assert.deepEqual(hpa.spec.metrics, [{ type: 'Resource', resource: { name: 'cpu', target: { type: 'Utilization', averageUtilization: 65 } } }]);
  assert.equal(hpa.spec.behavior.scaleDown.stabilizationWindowSeconds, SCALE_DOWN_STABILIZATION_SECONDS);
  // The label contract: GC and the drift watch find it like the other objects of the deployment.
  assert.equal(hpa.metadata.labels[LABEL.deploymentId], sts.metadata.labels[LABEL.deploymentId]);
  assert.equal(hpa.metadata.labels['app.kubernetes.io/managed-by'], 'krane');
});

test('each autoscaling field reaches the HPA', () => {
  const base = { minReplicas: 2, maxReplicas: 6, cpuUtilization: 65 };
  const hpaOf = (a: typeof base) => JSON.stringify(buildObjects(deploymentState({ autoscaling: a }))[2]);
  for (const k of Object.keys(base) as (keyof typeof base)[]) assert.notEqual(hpaOf({ ...base, [k]: base[k] + 1 }), hpaOf(base), `autoscaling.${k}`);
});

test('a fixed-size deployment has no HPA and keeps its replicas', () => {
  const objs = buildObjects(deploymentState({ replicas: 3 }));
  assert.deepEqual(objs.map((o) => o.kind), ['Service', 'StatefulSet']);
  assert.equal((objs[1] as any).spec.replicas, 3);
});

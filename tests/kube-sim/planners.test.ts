// Table tests of the simulator's pure decisions: workload planners and statuses, scheduling,
// quota messages, Table cells, logs and chaos.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { planStatefulSet, statefulSetStatus, type StsPodView } from '../../src/kube-sim/workloads/statefulset';
import { deploymentStatus, planDeployment, rolloutProgress, type DeployPodView } from '../../src/kube-sim/workloads/deployment';
import { pdbStatus } from '../../src/kube-sim/workloads/pdb';
import { parseQuantity, unschedulableReason } from '../../src/kube-sim/workloads/scheduler';
import { quotaKeys, quotaViolation } from '../../src/kube-sim/quota';
import { humanDuration, podSummary, tableVersion } from '../../src/kube-sim/tables';
import { containerLog, renderLog } from '../../src/kube-sim/logs';
import { decide, parseChaosRule, TokenBucket, type ChaosRule } from '../../src/kube-sim/chaos';
import { applyConflictMessage } from '../../src/kube-sim/fields';
import { goLabelSelector } from '../../src/kube-sim/validate';
import { mustResourceForKind } from '../../src/kube-sim/resources';
import type { KubeObject } from '../../src/kube-sim/types';

const pod = (ordinal: number, ready: boolean, revision = 'r2'): StsPodView => ({ name: `w-${ordinal}`, ordinal, ready, revision });

test('planStatefulSet: ordered scale up and down, parallel, rolling update, partition', () => {
  const base = { replicas: 3, parallel: false, rollingUpdate: true, partition: 0, updateRevision: 'r2' };
  const cases: [string, Parameters<typeof planStatefulSet>[0], { create: number[]; delete: string[] }][] = [
    ['empty: first ordinal only', { ...base, pods: [] }, { create: [0], delete: [] }],
    ['waits for the previous pod to be Ready', { ...base, pods: [pod(0, false)] }, { create: [], delete: [] }],
    ['next ordinal once Ready', { ...base, pods: [pod(0, true)] }, { create: [1], delete: [] }],
    ['parallel creates all', { ...base, parallel: true, pods: [] }, { create: [0, 1, 2], delete: [] }],
    ['scale down: highest first, one at a time', { ...base, replicas: 1, pods: [pod(0, true), pod(1, true), pod(2, true)] }, { create: [], delete: ['w-2'] }],
    ['rolling: highest outdated first when all Ready', { ...base, pods: [pod(0, true, 'r1'), pod(1, true, 'r1'), pod(2, true, 'r1')] }, { create: [], delete: ['w-2'] }],
    ['rolling: waits while a pod is not Ready', { ...base, pods: [pod(0, true, 'r1'), pod(1, false), pod(2, true)] }, { create: [], delete: [] }],
    ['rolling: broken outdated pods go at once', { ...base, pods: [pod(0, false, 'r1'), pod(1, false, 'r1'), pod(2, true)] }, { create: [], delete: ['w-1', 'w-0'] }],
    ['partition keeps lower ordinals', { ...base, partition: 2, pods: [pod(0, true, 'r1'), pod(1, true, 'r1'), pod(2, true)] }, { create: [], delete: [] }],
    ['OnDelete does not roll', { ...base, rollingUpdate: false, pods: [pod(0, true, 'r1'), pod(1, true, 'r1'), pod(2, true, 'r1')] }, { create: [], delete: [] }],
  ];
  for (const [name, input, want] of cases) assert.deepEqual(planStatefulSet(input), want, name);
});

test('statefulSetStatus: revisions converge when every pod runs the update revision', () => {
  const s = statefulSetStatus({ generation: 2, replicas: 2, updateRevision: 'r2', previousCurrentRevision: 'r1', pods: [{ ready: true, available: true, revision: 'r2' }, { ready: true, available: false, revision: 'r1' }] });
  assert.deepEqual([s.currentRevision, s.updatedReplicas, s.currentReplicas, s.readyReplicas, s.availableReplicas], ['r1', 1, 1, 2, 1]);
  const done = statefulSetStatus({ generation: 2, replicas: 1, updateRevision: 'r2', previousCurrentRevision: 'r1', pods: [{ ready: true, available: true, revision: 'r2' }] });
  assert.equal(done.currentRevision, 'r2');
});

const dpod = (name: string, isNew: boolean, available: boolean, created = '2026-01-01T00:00:00Z'): DeployPodView => ({ name, isNew, available, creationTimestamp: created });

test('planDeployment: surge and unavailability bounds, Recreate', () => {
  const rolling = { type: 'RollingUpdate', rollingUpdate: { maxSurge: 1, maxUnavailable: 0 } };
  const cases: [string, Parameters<typeof planDeployment>[0], { create: number; delete: string[] }][] = [
    ['fresh: all desired', { desired: 3, strategy: rolling, pods: [] }, { create: 3, delete: [] }],
    ['surge one new pod, keep old while unavailable', { desired: 2, strategy: rolling, pods: [dpod('o1', false, true), dpod('o2', false, true)] }, { create: 1, delete: [] }],
    ['new pod available: one old goes', { desired: 2, strategy: rolling, pods: [dpod('o1', false, true), dpod('o2', false, true), dpod('n1', true, true)] }, { create: 0, delete: ['o1'] }],
    ['unhealthy old pods go without waiting', { desired: 2, strategy: rolling, pods: [dpod('o1', false, false), dpod('n1', true, true), dpod('n2', true, true)] }, { create: 0, delete: ['o1'] }],
    ['no cleanup budget while a new pod is unavailable', { desired: 2, strategy: rolling, pods: [dpod('o1', false, false), dpod('o2', false, true), dpod('n1', true, false)] }, { create: 0, delete: [] }],
    ['too many new: newest unavailable first', { desired: 1, strategy: rolling, pods: [dpod('n1', true, true, '2026-01-01T00:00:00Z'), dpod('n2', true, false, '2026-01-01T00:00:01Z')] }, { create: 0, delete: ['n2'] }],
    ['Recreate: old pods go before any new one', { desired: 2, strategy: { type: 'Recreate' }, pods: [dpod('o1', false, true)] }, { create: 0, delete: ['o1'] }],
    ['Recreate: then all new', { desired: 2, strategy: { type: 'Recreate' }, pods: [] }, { create: 2, delete: [] }],
  ];
  for (const [name, input, want] of cases) assert.deepEqual(planDeployment(input), want, name);
});

test('rolloutProgress and deploymentStatus: ProgressDeadlineExceeded after no progress', () => {
  const p = rolloutProgress(undefined, 'a', 1000, 500, false);
  assert.equal(p.stalled, false);
  assert.equal(p.recheckInMs, 501);
  assert.equal(rolloutProgress(p.progress, 'a', 1600, 500, false).stalled, true);
  assert.equal(rolloutProgress(p.progress, 'b', 1600, 500, false).stalled, false, 'a change is progress');
  const s = deploymentStatus({ name: 'd', hash: 'h', generation: 1, desired: 1, minAvailable: 1, pods: [{ isNew: true, ready: false, available: false }], stalled: true, previousConditions: [], now: 'T' });
  const progressing = (s.conditions as any[]).find((c) => c.type === 'Progressing');
  assert.deepEqual([progressing.status, progressing.reason, progressing.message], ['False', 'ProgressDeadlineExceeded', 'ReplicaSet "d-h" has timed out progressing.']);
  assert.equal(s.unavailableReplicas, 1);
});

test('pdbStatus: minAvailable and maxUnavailable, absolute and percent', () => {
  const pods = [{ ready: true }, { ready: true }, { ready: false }];
  const cases: [unknown, [number, number]][] = [
    [{ minAvailable: 1 }, [1, 1]],
    [{ minAvailable: '100%' }, [3, 0]],
    [{ maxUnavailable: 1 }, [2, 0]],
    [{ maxUnavailable: '50%' }, [1, 1]],
  ];
  for (const [spec, [desired, allowed]] of cases) {
    const s = pdbStatus({ spec: spec as any, generation: 1, pods, previousCondition: undefined, now: 'T' });
    assert.deepEqual([s.desiredHealthy, s.disruptionsAllowed], [desired, allowed], JSON.stringify(spec));
  }
});

test('scheduling: quantities, and pods that fit no node', () => {
  assert.deepEqual(['500m', '2', '128Mi', '1Gi', '1e3', '1k', 'x'].map(parseQuantity), [0.5, 2, 128 * 1024 ** 2, 1024 ** 3, 1000, 1000, 0]);
  assert.equal(unschedulableReason({ containers: [{ resources: { requests: { cpu: '2', memory: '1Gi' } } }] }), undefined);
  assert.match(unschedulableReason({ containers: [{ resources: { limits: { memory: '64Gi' } } }] })!, /3 Insufficient memory/);
});

test('quota: keys per resource and the admission message', () => {
  assert.deepEqual(quotaKeys(mustResourceForKind('v1', 'Pod')), ['pods', 'count/pods']);
  assert.deepEqual(quotaKeys(mustResourceForKind('apps/v1', 'Deployment')), ['count/deployments.apps']);
  const q = { metadata: { name: 'q' }, spec: { hard: { pods: '2', 'count/pods': '5' } } } as unknown as KubeObject;
  assert.equal(quotaViolation([q], mustResourceForKind('v1', 'Pod'), 1), undefined);
  assert.equal(quotaViolation([q], mustResourceForKind('v1', 'Pod'), 2), 'exceeded quota: q, requested: pods=1, used: pods=2, limited: pods=2');
});

test('Tables: ages like kubectl, pod READY/STATUS/RESTARTS, Accept negotiation', () => {
  const cases: [number, string][] = [[5_000, '5s'], [119_000, '119s'], [150_000, '2m30s'], [600_000, '10m'], [3 * 3600_000 + 5 * 60_000, '3h5m'], [30 * 3600_000, '30h'], [50 * 3600_000, '2d2h'], [-5_000, '<invalid>']];
  for (const [ms, want] of cases) assert.equal(humanDuration(ms), want, String(ms));
  const now = Date.parse('2026-01-01T00:10:00Z');
  const crashing = { metadata: { name: 'p' }, spec: { containers: [{ name: 'a' }] }, status: { phase: 'Running', containerStatuses: [{ name: 'a', ready: false, restartCount: 3, state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: { terminated: { finishedAt: '2026-01-01T00:09:50Z' } } }] } } as unknown as KubeObject;
  assert.deepEqual(podSummary(crashing, now), { ready: '0/1', status: 'CrashLoopBackOff', restarts: '3 (10s ago)' });
  const running = { metadata: { name: 'p', deletionTimestamp: 'x' }, spec: { containers: [{ name: 'a' }] }, status: { phase: 'Running', containerStatuses: [{ name: 'a', ready: true, restartCount: 0, state: { running: {} } }] } } as unknown as KubeObject;
  assert.deepEqual(podSummary(running, now), { ready: '1/1', status: 'Terminating', restarts: '0' });
  assert.equal(tableVersion('application/json;as=Table;v=v1;g=meta.k8s.io,application/json'), 'v1');
  assert.equal(tableVersion('application/json; as=Table; v=v1beta1; g=meta.k8s.io'), 'v1beta1');
  assert.equal(tableVersion('application/json'), undefined);
});

test('logs: the instance asked for, tail, since, and the kubelet errors', () => {
  const now = Date.parse('2026-01-01T00:00:10Z');
  const p = (status: unknown) => ({ metadata: { name: 'p' }, spec: { nodeName: 'n', containers: [{ name: 'a', image: 'img:crash' }] }, status: { containerStatuses: [{ name: 'a', ...(status as object) }] } }) as unknown as KubeObject;
  const q = { previous: false, timestamps: false };
  const running = containerLog(p({ state: { running: { startedAt: '2026-01-01T00:00:00Z' } } }), q, undefined, 2_000, now);
  assert.equal(running.running, true);
  assert.equal(running.lines.length, 2 + 5);
  assert.equal(renderLog(running.lines, { ...q, tailLines: 2 }, now), 'GET /healthz 200\nGET /healthz 200\n');
  assert.equal(renderLog(running.lines, { ...q, sinceSeconds: 3 }, now).split('\n').length - 1, 2);
  const crashed = p({ state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: { terminated: { exitCode: 1, reason: 'Error', startedAt: '2026-01-01T00:00:00Z', finishedAt: '2026-01-01T00:00:01Z' } } });
  assert.match(renderLog(containerLog(crashed, q, 'crash', 2_000, now).lines, q, now), /exiting with code 1: the image img:crash is built to crash/);
  assert.throws(() => containerLog(p({ state: { waiting: { reason: 'ContainerCreating' } } }), q, undefined, 2_000, now), /is waiting to start: ContainerCreating/);
  assert.throws(() => containerLog(crashed, { ...q, container: 'b' }, undefined, 2_000, now), /container b is not valid for pod p/);
});

test('chaos: decisions by verb, resource, ratio and time; rule parsing; token bucket', () => {
  const rule: ChaosRule = { mode: 'error', ratio: 0.5, until: 1000, latencyMs: 0, retryAfterSeconds: 1, verbs: ['list'] };
  assert.equal(decide(rule, 'list', 'pods', 0, 0.1).action, 'error');
  assert.equal(decide(rule, 'list', 'pods', 0, 0.9).action, 'pass');
  assert.equal(decide(rule, 'get', 'pods', 0, 0.1).action, 'pass');
  assert.equal(decide(rule, 'list', 'pods', 1000, 0.1).action, 'pass');
  assert.deepEqual(decide({ ...rule, mode: 'throttle', retryAfterSeconds: 4 }, 'list', 'pods', 0, 0), { action: 'throttle', retryAfterSeconds: 4 });
  assert.deepEqual(decide({ ...rule, mode: 'latency', latencyMs: 9, resources: ['pods'] }, 'list', 'pods', 0, 0), { action: 'delay', ms: 9 });
  assert.ok('rule' in parseChaosRule({ mode: 'error', durationMs: 10 }, 0));
  const b = new TokenBucket({ qps: 1, burst: 2, retryAfterSeconds: 1 }, 0);
  assert.deepEqual([b.take(0), b.take(0), b.take(0), b.take(1000)], [true, true, false, true]);
});

test('messages: apply conflicts and Go-printed selectors as the API server writes them', () => {
  assert.equal(applyConflictMessage([{ message: 'conflict with "a"', field: '.x' }]), 'Apply failed with 1 conflict: conflict with "a": .x');
  assert.equal(applyConflictMessage([{ message: 'conflict with "b" using v1', field: '.y' }, { message: 'conflict with "a"', field: '.x' }]), 'Apply failed with 2 conflicts: conflicts with "a":\n- .x\nconflicts with "b" using v1:\n- .y');
  assert.equal(goLabelSelector({ matchExpressions: [{ key: 'k', operator: 'In', values: ['v'] }] }), 'v1.LabelSelector{MatchLabels:map[string]string(nil), MatchExpressions:[]v1.LabelSelectorRequirement{v1.LabelSelectorRequirement{Key:"k", Operator:"In", Values:[]string{"v"}}}}');
});

// The model's newer rules (issue 33), table-tested on hand-made snapshots: the shared traffic
// rules on every table entry, the answers the model predicts (predict.ts), the outcomes of a
// promote and a rollback, a deleted environment, and convergence (convergence.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import * as M from './lifecycle-model';
import * as P from './predict';
import { convergenceBreaks, type DesiredEnvironment, type RegionObjects } from './convergence';
import { routesBreaks } from './traffic-rules';

const REGIONS = ['a', 'b'];
const view = (status: string, o: Partial<M.DeploymentView> = {}): M.DeploymentView => ({ status, desiredState: 'running', error: null, environmentId: 'env', image: 'nginx:1.27', regions: REGIONS, replicas: 1, autoscaling: null, rolledBackFrom: null, strategy: 'rolling', topologyRunning: status !== 'stopped', ...o });
function snap(over: Partial<M.Snapshot> = {}): M.Snapshot {
  return {
    environmentId: 'env',
    table: [{ deploymentId: 's', weight: 100 }],
    deployments: { s: view('ready'), c: view('deploying', { strategy: 'canary' }) },
    readyPods: { s: { a: 1, b: 1 }, c: { a: 1, b: 1 } },
    failedChecks: {},
    regionStatus: { a: 'online', b: 'online' },
    regionAgeMs: { a: 10, b: 10 },
    quarantined: [],
    sentinelsProgressing: 0,
    environmentDeleted: false,
    ...over,
  };
}
function model(): M.Model {
  let m = M.created(M.initialModel(), { id: 's', kind: 'rolling', failureLimit: Infinity, query: 'qs', stable: null });
  m = M.created(m, { id: 'c', kind: 'canary', failureLimit: 2, query: 'qc', stable: 's' });
  return m;
}
const rules = (vs: M.Violation[]) => vs.map((v) => v.rule);
const dep = (m: M.Model, id: string) => m.deployments.find((d) => d.id === id)!;

test('traffic: every entry is judged, an unknown or foreign deployment in the table is a broken table', () => {
  assert.deepEqual(M.trafficViolations(snap(), REGIONS), []);
  const unknown = snap({ table: [{ deploymentId: 's', weight: 100 }, { deploymentId: 'ghost', weight: 0 }] });
  assert.deepEqual(M.trafficViolations(unknown, REGIONS).map((v) => v.message.slice(0, 9)), ['[backend]']);
  const foreign = snap({ table: [{ deploymentId: 'x', weight: 100 }], deployments: { x: view('ready', { environmentId: 'other' }) }, readyPods: { x: { a: 1, b: 1 } } });
  assert.deepEqual(M.trafficViolations(foreign, REGIONS).map((v) => v.message.slice(0, 9)), ['[backend]']);
});

test('routes: an entry with a share lists exactly its ready pods; a weight-0 entry is not judged', () => {
  const ready = (id: string) => (id === 'auto' ? ['auto-0', 'auto-1', 'auto-2'] : ['c-0']);
  assert.deepEqual(routesBreaks('a', [{ deploymentId: 'auto', weight: 100, addresses: ['auto-2', 'auto-0', 'auto-1'] }], ready), []);
  assert.deepEqual(routesBreaks('a', [{ deploymentId: 'auto', weight: 100, addresses: ['auto-0'] }], ready).map((b) => b.rule), ['addresses']);
  assert.deepEqual(routesBreaks('a', [{ deploymentId: 'c', weight: 0, addresses: [] }], ready), []);
});

test('predictions: abort, promote, start and create answer as the model says, either way across a race', () => {
  const m = model();
  const c = dep(m, 'c');
  const done = snap({ deployments: { ...snap().deployments, c: view('ready', { strategy: 'canary' }) } });
  assert.deepEqual([...P.expectAbort(c, snap(), snap())], ['202']);
  assert.deepEqual([...P.expectAbort(c, snap(), done)].sort(), ['202', '409:ERR_DEPLOYMENT_STATE_CONFLICT']);
  assert.deepEqual([...P.expectAbort(c, done, done)], ['409:ERR_DEPLOYMENT_STATE_CONFLICT']);
  assert.deepEqual([...P.expectAbort(dep(m, 's'), snap(), snap())], ['409:ERR_DEPLOYMENT_STATE_CONFLICT'], 'a rolling deployment');
  // A stop or start that changed it: no walk takes a command any more.
  const moved = M.desiredAccepted(m, 'c', 'stopped', true);
  assert.deepEqual([...P.expectAbort(dep(moved, 'c'), snap(), snap())], ['409:ERR_DEPLOYMENT_STATE_CONFLICT']);
  assert.deepEqual([...P.expectAbort(dep(M.desiredAccepted(m, 'c', 'running', false), 'c'), snap(), snap())], ['202'], 'a start that changed nothing');

  assert.deepEqual([...P.expectPromote(m, dep(m, 's'), REGIONS, snap(), snap())], ['200']);
  assert.deepEqual([...P.expectPromote(m, c, REGIONS, snap(), snap())], ['200'], 'a walk takes it as a command');
  const stopped = snap({ deployments: { ...snap().deployments, s: view('stopped', { desiredState: 'stopped' }) } });
  assert.deepEqual([...P.expectPromote(m, dep(m, 's'), REGIONS, stopped, stopped)], ['409:ERR_DEPLOYMENT_NOT_READY']);
  const off = M.regionOffline(m, 'b');
  const offline = snap({ regionStatus: { a: 'online', b: 'offline' } });
  assert.deepEqual([...P.expectPromote(off, dep(off, 's'), REGIONS, offline, offline)], ['409:ERR_PROMOTE_REGION_OFFLINE']);
  assert.deepEqual([...P.expectPromote(off, dep(off, 's'), REGIONS, snap(), offline)].sort(), ['200', '409:ERR_PROMOTE_REGION_OFFLINE'], 'krane down, not yet noticed');
  assert.deepEqual([...P.expectPromote(m, dep(m, 's'), REGIONS, snap({ regionAgeMs: { a: 10, b: 900 } }), snap())].sort(), ['200', '409:ERR_PROMOTE_REGION_OFFLINE'], 'a region close to its offline threshold');

  const failed = snap({ deployments: { ...snap().deployments, c: view('failed') } });
  assert.deepEqual([...P.expectStart(m, c, failed, failed)], ['409:ERR_DEPLOYMENT_STATE_CONFLICT']);
  assert.deepEqual([...P.expectStart(m, c, snap(), snap())], ['200']);
  assert.deepEqual([...P.expectStart(M.environmentDeleted(m), c, snap(), snap())], ['409:ERR_DEPLOYMENT_STATE_CONFLICT']);
  assert.deepEqual([...P.expectCreate(m, 'nginx:1.27', snap(), snap())], ['202']);
  assert.deepEqual([...P.expectCreate(m, 'nginx:1.27', snap(), snap({ quarantined: ['nginx:1.27'] }))].sort(), ['202', '409:ERR_IMAGE_QUARANTINED']);
  assert.deepEqual([...P.expectCreate(M.environmentDeleted(m), 'nginx:1.27', snap(), snap())], ['400:ERR_VALIDATION_INVALID']);
});

test('predictions: a deletion is refused while anything runs, a deleted environment is gone', () => {
  const m = model();
  assert.deepEqual([...P.expectDeleteEnvironment(m, snap(), snap())], ['409:ERR_TENANCY_BUSY']);
  const quiet = snap({ table: [], deployments: { s: view('stopped', { desiredState: 'stopped' }), c: view('rolled_back', { desiredState: 'stopped', topologyRunning: false }) } });
  assert.deepEqual([...P.expectDeleteEnvironment(m, quiet, quiet)], ['200']);
  assert.deepEqual([...P.expectDeleteEnvironment(m, quiet, { ...quiet, sentinelsProgressing: 1 })].sort(), ['200', '409:ERR_TENANCY_BUSY']);
  const failedRunning = snap({ deployments: { s: view('failed', { topologyRunning: false }), c: view('stopped', { desiredState: 'stopped' }) } });
  assert.equal(P.busy(m, failedRunning), false, 'a failed deployment without a running topology does not hold a deletion');
  assert.deepEqual([...P.expectDeleteEnvironment(M.environmentDeleted(m), quiet, quiet)], ['404:ERR_NOT_FOUND']);
});

test('outcomes: a promote moved the table; a rollback copied its target\'s spec; a deleted environment runs nothing', () => {
  const before = snap();
  assert.deepEqual(M.promoteViolations('s', before, snap()), []);
  assert.deepEqual(rules(M.promoteViolations('s', snap({ deployments: { s: view('ready') } }), snap({ table: [{ deploymentId: 'x', weight: 100 }] }))), ['promote']);
  assert.deepEqual(M.promoteViolations('s', before, snap({ table: [{ deploymentId: 'c', weight: 100 }] })), [], 'a deploy on its way took the table since');

  const target = { ...view('ready', { autoscaling: { minReplicas: 1, maxReplicas: 3 } }), id: 't' };
  assert.deepEqual(M.rollbackViolations(target, { ...target, id: 'r', rolledBackFrom: 't', status: 'pending' }), []);
  assert.deepEqual(rules(M.rollbackViolations(target, { ...target, id: 'r', rolledBackFrom: 't', image: 'nginx:1.28' })), ['promote']);
  assert.deepEqual(rules(M.rollbackViolations(target, { ...target, id: 'r', rolledBackFrom: 't', autoscaling: null })), ['promote']);

  const gone = M.environmentDeleted(model());
  const quiet = snap({ table: [], environmentDeleted: true, deployments: { s: view('stopped', { desiredState: 'stopped' }), c: view('rolled_back', { desiredState: 'stopped', topologyRunning: false }) } });
  assert.deepEqual(M.deletedViolations(gone, quiet), []);
  assert.deepEqual(rules(M.deletedViolations(gone, { ...quiet, deployments: { ...quiet.deployments, s: view('deploying') } })), ['deleted']);
  assert.deepEqual(rules(M.deletedViolations(gone, { ...quiet, environmentDeleted: false })), ['deleted']);
});

test('convergence: the clusters hold what desired state says, autoscaled replicas within bounds, routes addressing ready pods', () => {
  const want: DesiredEnvironment = {
    workloads: { a: [{ deploymentId: 'd', running: true, image: 'img', replicas: 1, autoscaling: { minReplicas: 1, maxReplicas: 3 } }, { deploymentId: 'old', running: false, image: 'img', replicas: 1, autoscaling: null }] },
    sentinelRegions: ['a'],
    table: [{ deploymentId: 'd', weight: 100 }],
    tableRegions: ['a'],
  };
  const have = (o: Partial<RegionObjects> = {}): Record<string, RegionObjects> => ({
    a: { statefulsets: { d: { image: 'img', replicas: 3 } }, autoscalers: ['d'], sentinels: 1, routes: [{ deploymentId: 'd', weight: 100, addresses: ['d-0', 'd-1', 'd-2'] }], ready: { d: ['d-0', 'd-1', 'd-2'] }, ...o },
  });
  assert.deepEqual(convergenceBreaks(want, have()), []);
  const cases: [string, Partial<RegionObjects>][] = [
    ['a stopped deployment still has its StatefulSet', { statefulsets: { d: { image: 'img', replicas: 3 }, old: { image: 'img', replicas: 1 } } }],
    ['replicas beyond the autoscaler\'s maximum', { statefulsets: { d: { image: 'img', replicas: 4 } } }],
    ['no autoscaler', { autoscalers: [] }],
    ['no sentinel', { sentinels: 0 }],
    ['the routes list the minimum only', { routes: [{ deploymentId: 'd', weight: 100, addresses: ['d-0'] }] }],
    ['no routes', { routes: null }],
  ];
  for (const [name, o] of cases) assert.equal(convergenceBreaks(want, have(o)).length, 1, name);
  const deleted: DesiredEnvironment = { workloads: {}, sentinelRegions: [], table: [], tableRegions: [] };
  assert.deepEqual(convergenceBreaks(deleted, have({ statefulsets: {}, autoscalers: [], sentinels: 0, routes: null })), []);
  assert.equal(convergenceBreaks(deleted, have({ statefulsets: {}, sentinels: 0 })).length, 1, 'routes left behind');
});

test('desired: a deployment started last is not stopped by a blue-green\'s scale-down from before the start (defect 6)', () => {
  let m = M.created(M.initialModel(), { id: 'blue', kind: 'rolling', failureLimit: Infinity, query: 'qb', stable: null });
  m = M.created(M.tick(m), { id: 'green', kind: 'blue-green', failureLimit: Infinity, query: 'qg', stable: 'blue' });
  m = M.desiredAccepted(M.tick(m), 'blue', 'stopped');
  m = M.desiredAccepted(M.tick(m), 'blue', 'running');
  const scaledDown = snap({ deployments: { blue: view('stopped', { desiredState: 'stopped' }), green: view('ready') } });
  assert.deepEqual(rules(M.desiredViolations(m, scaledDown)), ['desired-overwritten']);
  // A walk that began after the start may stop it (its switch, its own scale-down).
  const later = M.created(M.tick(m), { id: 'next', kind: 'blue-green', failureLimit: Infinity, query: 'qn', stable: 'blue' });
  assert.deepEqual(M.desiredViolations(later, scaledDown), []);
  // A start of a running deployment changed nothing: the walk created before it may stop it.
  let noop = M.created(M.initialModel(), { id: 'blue', kind: 'rolling', failureLimit: Infinity, query: 'qb', stable: null });
  noop = M.created(M.tick(noop), { id: 'green', kind: 'canary', failureLimit: Infinity, query: 'qg', stable: 'blue' });
  noop = M.desiredAccepted(M.tick(noop), 'blue', 'running', false);
  assert.deepEqual(M.desiredViolations(noop, scaledDown), []);
});

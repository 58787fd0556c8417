// krane's reports through the real ctrl routes into Postgres: the wire shapes agree, instance
// rows appear and go, and reports about another region's deployment are refused (403) while
// the rest of the batch still lands.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { testDb } from '../helpers/db';
import { buildCtrlApp } from '../../src/http';
import { clusterStatusRoutes } from '../../src/http/cluster-status';
import { agentTokens, applyFailures, deployments, instances, sentinels, topology } from '../../src/store';
import { StatusReporter } from '../../src/sync/reporter';
import { InstanceStatusWatcher } from '../../src/kube/status';
import type { ResourceRef } from '../../src/sync/wire';
import { controller, logger, startSim, until } from './helpers';
import { deploymentState } from './fixtures';

const { sql } = await testDb();
const { api } = await startSim(30);
const { app } = await buildCtrlApp({ sql, logger, routes: [clusterStatusRoutes({ sql })] });
await app.listen({ host: '127.0.0.1', port: 0 });
after(() => app.close());
const ctrlUrl = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;

const scope = { workspaceId: 'default', projectId: 'default', appId: 'default', environmentId: 'default' };
async function newDeployment(id: string, region: string): Promise<void> {
  await deployments.insertDeployment(sql, {
    id, ...scope, image: 'img:1', buildContext: null, cpuMillicores: 250, memoryMib: 256, replicas: 2, port: 8080, command: [], env: {}, regions: [region],
  });
  await topology.upsertTopology(sql, { deploymentId: id, region, workspaceId: 'default', replicas: 2 });
}

test('instance rows follow the pods; another region\'s deployment is refused without losing the rest', async () => {
  await newDeployment('dep-mine', 'us-east-1');
  await newDeployment('dep-other', 'eu-west-1');
  const token = (await agentTokens.createAgentToken(sql, 'us-east-1')).token;
  const reporter = new StatusReporter({ controlPlaneUrl: ctrlUrl, token, region: 'us-east-1', logger, flushDelayMs: 10 });
  const watcher = new InstanceStatusWatcher({ api, namespace: 'unkey', sink: reporter, logger, relistIntervalMs: 60_000 });
  watcher.start();
  try {
    const ctl = controller(api);
    const ref = (id: string): ResourceRef => ({ type: 'deployment_topology', id, region: 'us-east-1' });
    // dep-other is not deployed in us-east-1: its pods' reports must be refused by ctrl
    await ctl.apply(ref('dep-other'), deploymentState({ ...scope, deploymentId: 'dep-other', replicas: 1 }));
    await ctl.apply(ref('dep-mine'), deploymentState({ ...scope, deploymentId: 'dep-mine', replicas: 2 }));
    const rows = await until(async () => {
      const r = await instances.listInstances(sql, 'dep-mine');
      return r.length === 2 && r.every((i) => i.status === 'running') ? r : undefined;
    });
    assert.deepEqual(rows.map((r) => [r.region, r.podName, r.address, r.cpuMillicores, r.memoryMib]), [
      ['us-east-1', 'dep-mine-0', 'dep-mine-0.dep-mine.unkey.svc.cluster.local', 250, 256],
      ['us-east-1', 'dep-mine-1', 'dep-mine-1.dep-mine.unkey.svc.cluster.local', 250, 256],
    ]);
    await until(() => reporter.pending() === 0);
    assert.equal((await instances.listInstances(sql, 'dep-other')).length, 0);

    await ctl.apply(ref('dep-mine'), deploymentState({ ...scope, deploymentId: 'dep-mine', replicas: 1 }));
    await until(async () => (await instances.listInstances(sql, 'dep-mine')).length === 1);
    // sentinels untouched by deployment reports
    assert.equal((await sentinels.listSentinels(sql)).length, 0);
  } finally {
    await watcher.stop();
    await reporter.close();
  }
});

test('a cleared apply failure stays cleared: the latest report for a resource wins', async () => {
  await newDeployment('dep-flip', 'us-east-1');
  const token = (await agentTokens.createAgentToken(sql, 'us-east-1')).token;
  // A long flush delay: both reports sit in the buffer and go out in one body.
  const reporter = new StatusReporter({ controlPlaneUrl: ctrlUrl, token, region: 'us-east-1', logger, flushDelayMs: 60_000 });
  try {
    const ref: ResourceRef = { type: 'deployment_topology', id: 'dep-flip', region: 'us-east-1' };
    reporter.apply({ resource: ref, outcome: 'failed', code: 'ERR_KUBE_INVALID', reason: 'StatefulSet.apps "dep-flip" is invalid' });
    reporter.apply({ resource: ref, outcome: 'succeeded' });
    await reporter.flush();
    assert.equal(reporter.pending(), 0);
    assert.equal((await applyFailures.listApplyFailures(sql, 'deployment_topology', 'dep-flip')).length, 0, 'the failure was cleared after it was raised');
    // The other way round, the failure stands.
    reporter.apply({ resource: ref, outcome: 'succeeded' });
    reporter.apply({ resource: ref, outcome: 'failed', code: 'ERR_KUBE_FORBIDDEN', reason: 'exceeded quota: compute' });
    await reporter.flush();
    assert.deepEqual((await applyFailures.listApplyFailures(sql, 'deployment_topology', 'dep-flip')).map((f) => [f.region, f.code, f.reason]), [['us-east-1', 'ERR_KUBE_FORBIDDEN', 'exceeded quota: compute']]);
  } finally {
    await reporter.close();
  }
});

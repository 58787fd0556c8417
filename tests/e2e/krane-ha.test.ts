// Two krane replicas in one cluster: one leads through the Lease and streams; when it stops,
// the standby takes over, and a deploy made while no replica led converges. ctrl shows the
// leading agent. (A leader that dies without releasing: tests/e2e/krane-kill.test.ts, and the
// bare elector in tests/kube/leader.test.ts.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { testStack, until } from '../helpers/stack';
import { loadConfig } from '../../src/config';
import { startKrane } from '../../src/modes/krane';
import { Watcher } from '../../src/sync/watcher';

const tuning = { minBackoffMs: 50, reporterRetryMs: 100, breakerResetMs: 500, heartbeatMs: 200 };
const createWatcher = (o: any) => new Watcher({ ...o, backoffMinMs: 50, backoffMaxMs: 200 });
const stack = await testStack({ regions: ['us-east-1'], krane: { tuning, createWatcher } });
const region = stack.regions.get('us-east-1')!;

test('a standby krane takes over when the leader stops and converges a deploy made meanwhile', async () => {
  const leaderView = () => until(async () => {
    const r = (await stack.api('/v1/regions')).body[0];
    return r.status === 'online' && r.agent.leader ? r : undefined;
  }, 15_000, 'a leading agent');
  const first = await leaderView();
  const standby = await startKrane(
    loadConfig('krane', { region: 'us-east-1', controlPlane: stack.ctrl.url, token: region.token, listen: '127.0.0.1:0', logLevel: 'silent' }, {}),
    { kubeConfig: region.sim.sim.kubeConfig(), tuning, createWatcher },
  );
  try {
    // The standby's beats are not recorded: the region still shows the first agent leading.
    assert.equal((await leaderView()).agent.id, first.agent.id);
    await stack.stopKrane('us-east-1');
    const d = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1 } });
    assert.equal(d.status, 202);
    const ready = await until(async () => {
      const r = await stack.api(`/v1/deployments/${d.body.id}`);
      return ['ready', 'failed'].includes(r.body.status) ? r.body : undefined;
    }, 30_000, 'deploy finished');
    assert.equal(ready.status, 'ready', ready.error);
    const now = await leaderView();
    assert.notEqual(now.agent.id, first.agent.id, 'the standby leads now');
  } finally {
    await standby.close();
  }
});

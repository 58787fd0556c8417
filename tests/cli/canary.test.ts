// The CLI's side of progressive delivery: `deploy --strategy canary --steps --pause` builds the
// strategy (and a bad one is answered naming the flag), `--wait` exits 1 on a rollback, and
// `deployments abort ID` rolls a canary in progress back.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testStack, until } from '../helpers/stack';
import { runCli as run } from '../helpers/cli';
import { strategyFromFlags } from '../../src/cli/commands/deploy';

const stack = await testStack();
const cwd = mkdtempSync(join(tmpdir(), 'unkey-cli-canary-'));
after(() => rmSync(cwd, { recursive: true, force: true }));
mkdirSync(join(cwd, '.unkey-infra', 'dev'), { recursive: true });
writeFileSync(
  join(cwd, '.unkey-infra', 'dev', 'dev.json'),
  JSON.stringify({ apiUrl: stack.ctrl.url, adminToken: stack.adminToken, databaseUrl: stack.db.url, regions: { 'us-east-1': {}, 'eu-west-1': {} } }),
);
const runCli = (argv: string[]) => run(argv, { cwd, watch: { pollMs: 200 } });

test('strategyFromFlags: canary steps share the pause, analysis flags nest, nonsense is a usage error', () => {
  assert.equal(strategyFromFlags({}), undefined);
  assert.deepEqual(strategyFromFlags({ strategy: 'canary', steps: [10, 50], pause: '30s' }), { type: 'canary', steps: [{ weight: 10, pause: '30s' }, { weight: 50, pause: '30s' }] });
  assert.deepEqual(strategyFromFlags({ strategy: 'blue-green', analysisQuery: 'up', analysisMin: 1, prometheusUrl: 'http://p:9090' }), {
    type: 'blue-green',
    analysis: { prometheus: { url: 'http://p:9090', query: 'up', min: 1 } },
  });
  assert.throws(() => strategyFromFlags({ strategy: 'canary' }), /needs --steps/);
  assert.throws(() => strategyFromFlags({ strategy: 'linear' }), /rolling, canary or blue-green/);
  assert.throws(() => strategyFromFlags({ strategy: 'blue-green', steps: [10] }), /for --strategy canary/);
});

test('deploy --strategy canary --wait walks to ready after a rolling deploy; a bad step is a 400 naming --steps', async () => {
  const first = await runCli(['deploy', '--image', 'nginx:1.27', '--replicas', '1', '--wait']);
  assert.equal(first.code, 0, first.stderr);
  const r = await runCli(['deploy', '--image', 'nginx:1.27', '--replicas', '1', '--strategy', 'canary', '--steps', '10,50', '--pause', '300ms', '--wait']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const id = /created deployment (dep-[a-z0-9]+)/.exec(r.stdout)![1]!;
  assert.deepEqual((await stack.api(`/v1/deployments/${id}`)).body.strategy, { type: 'canary', steps: [{ weight: 10, pause: '300ms' }, { weight: 50, pause: '300ms' }] });
  assert.deepEqual((await stack.api('/v1/environments/default/traffic')).body.backends, [{ deploymentId: id, weight: 100 }]);

  const bad = await runCli(['deploy', '--image', 'nginx:1.27', '--strategy', 'canary', '--steps', '50,10', '--pause', '1s']);
  assert.notEqual(bad.code, 0);
  assert.match(bad.stderr, /--steps/);
});

test('deployments abort rolls a canary back; deploy --wait on it exits 1 saying it was rolled back', async () => {
  const waiting = runCli(['deploy', '--image', 'nginx:1.27', '--replicas', '1', '--strategy', 'canary', '--steps', '20', '--pause', '60s', '--wait']);
  const canaryAt20 = async () => (await stack.api('/v1/environments/default/traffic')).body.backends.find((b: any) => b.weight === 20)?.deploymentId as string | undefined;
  const id = await until(canaryAt20, 30_000, 'canary at 20%');
  const r = await runCli(['deployments', 'abort', id]);
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, new RegExp(`aborting ${id}`));
  const followed = await waiting;
  assert.equal(followed.code, 1, followed.stdout + followed.stderr);
  // --wait showed the canary's share of traffic live, as the walk set it.
  assert.match(followed.stdout, /traffic 20%/, followed.stdout);
  assert.match(followed.stderr, new RegExp(`deployment ${id} was rolled back: aborted by operator`));
  assert.equal((await stack.api(`/v1/deployments/${id}`)).body.status, 'rolled_back');
  const again = await runCli(['deployments', 'abort', id]);
  assert.notEqual(again.code, 0, 'a rolled-back canary cannot be aborted again');
});

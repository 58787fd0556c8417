// The issue-25 commands against a remote ctrl (no dev.json: the API and token from the
// environment): deploy without --regions (ctrl's default regions), --version, versions,
// rollback --to-version, quarantine ls|rm and features get|set.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testStack, until } from '../helpers/stack';
import { runCli as run } from '../helpers/cli';

const stack = await testStack();
const cwd = mkdtempSync(join(tmpdir(), 'unkey-cli-versions-'));
after(() => rmSync(cwd, { recursive: true, force: true }));
const runCli = (argv: string[]) => run(argv, { cwd, env: { UNKEY_INFRA_API: stack.ctrl.url, UNKEY_INFRA_TOKEN: stack.adminToken }, watch: { pollMs: 200, live: false } });

test('deploy against a remote ctrl needs no --regions; --version names it; versions lists it; rollback --to-version deploys it again', async () => {
  const d = await runCli(['deploy', '--image', 'nginx:1.25', '--replicas', '1', '--version', 'one', '--wait']);
  assert.equal(d.code, 0, d.stderr + d.stdout);
  assert.doesNotMatch(d.stderr, /no regions/);
  assert.match(d.stdout, /\(us-east-1, eu-west-1\), version one/);
  const again = await runCli(['deploy', '--image', 'nginx:1.26', '--replicas', '1', '--version', 'one']);
  assert.notEqual(again.code, 0);
  assert.match(again.stderr, /ERR_DEPLOYMENT_VERSION_TAKEN|held by deployment/);

  const v = await runCli(['deployments', 'versions']);
  assert.equal(v.code, 0, v.stderr);
  assert.match(v.stdout, /^VERSION\s+DEPLOYMENT\s+STATUS\s+IMAGE/);
  assert.match(v.stdout, /\none\s+dep-\S+\s+ready\s+nginx:1\.25/);

  const rb = await runCli(['deployments', 'rollback', '--to-version', 'one', '--wait']);
  assert.equal(rb.code, 0, rb.stderr + rb.stdout);
  assert.match(rb.stdout, /created deployment (dep-\S+) \(v\d+\) from version one/);
  const after = await runCli(['deployments', 'versions', '--json']);
  const rows = JSON.parse(after.stdout).versions;
  const one = rows.find((r: any) => r.version === 'one');
  assert.equal(one.rolledBackBy.length, 1);
});

test('quarantine ls and rm, features get and set', async () => {
  const failed = await stack.api('/v1/deployments', { body: { image: 'registry.local/app:crash-cli', regions: ['us-east-1'], replicas: 1 } });
  await until(async () => (await stack.api(`/v1/deployments/${failed.body.id}`)).body.status === 'failed' || undefined, 30_000, 'failed');
  const ls = await runCli(['deployments', 'quarantine', 'ls']);
  assert.equal(ls.code, 0, ls.stderr);
  assert.match(ls.stdout, new RegExp(`registry.local/app:crash-cli\\s+${failed.body.id}`));
  const rm = await runCli(['deployments', 'quarantine', 'rm', 'registry.local/app:crash-cli']);
  assert.equal(rm.code, 0, rm.stderr);
  assert.match((await runCli(['deployments', 'quarantine', 'ls'])).stdout, /no quarantined images/);

  const set = await runCli(['features', 'set', 'default', 'canary=off', 'blueGreen=off']);
  assert.equal(set.code, 0, set.stderr);
  assert.match(set.stdout, /canary\s+off/);
  const get = await runCli(['features', 'get', 'default', '--json']);
  assert.deepEqual(JSON.parse(get.stdout).features, { multiRegion: true, autoScaling: true, blueGreen: false, canary: false });
  const refused = await runCli(['deploy', '--image', 'nginx:1.27', '--strategy', 'canary', '--steps', '10', '--pause', '1s']);
  assert.notEqual(refused.code, 0);
  assert.match(refused.stderr, /canary/);
});

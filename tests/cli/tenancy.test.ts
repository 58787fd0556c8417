// The tenancy, key and audit commands (issue 26) against ctrl on a test database, run through
// commander as main.ts registers them: a workspace, project and environment made and read from
// the command line, a key minted with `keys create` and then used as `--token` (the CLI takes a
// key where it takes the admin token), its 403 for a write it lacks, `audit ls` showing both.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { runCli } from '../helpers/cli';
import { testCtrl } from '../http/helpers';

const t = await testCtrl();
const as = (token: string) => ['--api', t.url, '--token', token];
const admin = as(t.adminToken);

test('workspaces, projects and environments from the command line; a key as --token; audit ls', async () => {
  assert.equal((await runCli(['workspaces', 'create', '--id', 'ws-cli', '--name', 'cli tenant', ...admin])).stdout, 'ws-cli\n');
  assert.equal((await runCli(['projects', 'create', '--workspace', 'ws-cli', '--id', 'prj-cli', '--name', 'api', ...admin])).code, 0);
  const env = await runCli(['environments', 'create', '--project', 'prj-cli', '--slug', 'production', '--regions', 'us-east-1', '--json', ...admin]);
  assert.equal(env.code, 0, env.stderr);
  const envId = JSON.parse(env.stdout).id as string;
  const ls = await runCli(['environments', 'ls', '--project', 'prj-cli', ...admin]);
  assert.match(ls.stdout, new RegExp(`${envId}\\s+production\\s+us-east-1`));

  const created = await runCli(['keys', 'create', '--scope', 'ws-cli/prj-cli', '--permissions', 'deployments.read,audit.read', '--name', 'ci', ...admin]);
  assert.equal(created.code, 0, created.stderr);
  const key = created.stdout.trim();
  assert.match(key, /^uik_/);
  assert.match(created.stderr, /shown only now/);
  const asKey = as(key);
  const mine = await runCli(['workspaces', 'ls', ...asKey]);
  assert.match(mine.stdout, /ws-cli/);
  assert.doesNotMatch(mine.stdout, /default/);
  const refused = await runCli(['environments', 'delete', envId, ...asKey]);
  assert.notEqual(refused.code, 0);
  assert.match(refused.stderr, /environments\.write/);
  const keys = await runCli(['keys', 'ls', ...admin]);
  assert.match(keys.stdout, /ws-cli\/prj-cli\s+deployments\.read,audit\.read/);
  assert.ok(!keys.stdout.includes(key));

  const audit = await runCli(['audit', 'ls', '--since', '1h', ...asKey]);
  assert.equal(audit.code, 0, audit.stderr);
  assert.match(audit.stdout, /environment\.delete\s+\S+\s+denied/);
  const byAdmin = await runCli(['audit', 'ls', '--action', 'workspace.', ...admin]);
  assert.match(byAdmin.stdout, /admin:admin\s+workspace\.create\s+ws-cli\s+ok/);

  const keyId = JSON.parse((await runCli(['keys', 'ls', '--json', ...admin])).stdout).keys[0].id as string;
  assert.equal((await runCli(['keys', 'revoke', keyId, ...admin])).code, 0);
  assert.notEqual((await runCli(['workspaces', 'ls', ...asKey])).code, 0);
  const del = await runCli(['environments', 'delete', envId, ...admin]);
  assert.equal(del.code, 0, del.stderr);
  assert.match(del.stdout, /deleted/);
});

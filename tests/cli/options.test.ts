// The client's flags that the README and API.md promise, each shown against the real system:
// a successful `deploy --build-context`, --memory, --port, --environment (deploy and ls),
// --data-dir (where dev.json is read), and `sentinels deploy --image/--replicas`.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testStack } from '../helpers/stack';
import { runCli } from '../helpers/cli';
import { newId } from '../../src/ids';
import { tenancy } from '../../src/store';

// The "build" names an image after the deployment, so the test can tell it deployed that image.
// Build contexts must lie under --build-root (required with --build-command): the test's own directory.
const tmp = mkdtempSync(join(tmpdir(), 'unkey-cli-options-'));
const stack = await testStack({ regions: ['us-east-1'], ctrl: { settings: { buildRoot: tmp, buildCommand: 'test -f Dockerfile && echo "registry.local/built:$UNKEY_DEPLOYMENT_ID"' } } });
after(() => rmSync(tmp, { recursive: true, force: true }));
const env = { UNKEY_INFRA_API: stack.ctrl.url, UNKEY_INFRA_TOKEN: stack.adminToken };
const cli = (argv: string[]) => runCli(argv, { env, cwd: tmp, watch: { pollMs: 200 } });

test('deploy --build-context --memory --port --environment --wait: built, deployed with those values; ls --environment finds it', async () => {
  const environmentId = newId('env');
  await tenancy.insertEnvironment(stack.db.sql, { workspaceId: 'default', projectId: 'default', appId: 'default', environmentId, slug: 'preview' });
  const ctx = join(tmp, 'app');
  mkdirSync(ctx);
  writeFileSync(join(ctx, 'Dockerfile'), 'FROM scratch\n');
  const r = await cli(['deploy', '--build-context', ctx, '--regions', 'us-east-1', '--replicas', '1', '--memory', '256', '--port', '9000', '--environment', environmentId, '--wait']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const id = /created deployment (dep-[a-z0-9]+)/.exec(r.stdout)?.[1];
  assert.ok(id, r.stdout);
  const d = (await stack.api(`/v1/deployments/${id}`)).body;
  assert.equal(d.status, 'ready');
  assert.equal(d.image, `registry.local/built:${id}`);
  assert.equal(d.buildContext, ctx);
  assert.equal(d.memoryMib, 256);
  assert.equal(d.port, 9000);
  assert.equal(d.environmentId, environmentId);

  const ls = await cli(['deployments', 'ls', '--environment', environmentId, '--json']);
  assert.deepEqual(JSON.parse(ls.stdout).deployments.map((x: { id: string }) => x.id), [id]);
  const dflt = await cli(['deployments', 'ls', '--json']);
  assert.ok(!JSON.parse(dflt.stdout).deployments.some((x: { id: string }) => x.id === id), 'not in the default environment');
});

test('--data-dir: the API and token come from dev.json in that directory', async () => {
  const dir = join(tmp, 'elsewhere');
  mkdirSync(dir);
  writeFileSync(join(dir, 'dev.json'), JSON.stringify({ apiUrl: stack.ctrl.url, adminToken: stack.adminToken, databaseUrl: stack.db.url, regions: { 'us-east-1': {} } }), { mode: 0o600 });
  const r = await runCli(['deployments', 'ls', '--data-dir', dir, '--json'], { cwd: tmp });
  assert.equal(r.code, 0, r.stderr);
  assert.ok(Array.isArray(JSON.parse(r.stdout).deployments), r.stdout);
  const without = await runCli(['deployments', 'ls'], { cwd: tmp });
  assert.equal(without.code, 2, 'without it, no dev.json is found in the default place');
});

test('sentinels deploy --image --replicas: the sentinel runs the new image with the new count', async () => {
  const sentinels = async () => JSON.parse((await cli(['sentinels', 'ls', '--json'])).stdout).sentinels as { id: string; image: string; replicas: number }[];
  // A deploy creates its environment's sentinel when there is none yet.
  if ((await sentinels()).length === 0) assert.equal((await cli(['deploy', '--image', 'nginx:1.27', '--regions', 'us-east-1', '--replicas', '1', '--wait'])).code, 0);
  const id = (await sentinels())[0]!.id;
  const r = await cli(['sentinels', 'deploy', id, '--image', 'registry.local/sentinel:v9', '--replicas', '3']);
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stdout, `sentinel ${id}: READY on registry.local/sentinel:v9\n`);
  const after = (await sentinels()).find((s) => s.id === id)!;
  assert.equal(after.image, 'registry.local/sentinel:v9');
  assert.equal(after.replicas, 3);
});

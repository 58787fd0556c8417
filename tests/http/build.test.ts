// The build command (issue 16 item 3): it runs with a minimal environment, only in directories
// under --build-root, and its output goes to ctrl's log, never into the API.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/config';
import { until } from '../helpers/wait';
import { captureLogger, testCtrl } from './helpers';

// A secret in ctrl's own environment: the build must not inherit it.
process.env.UNKEY_TEST_CTRL_SECRET = 'ctrl-env-secret-5d1e';

const root = realpathSync(mkdtempSync(join(tmpdir(), 'unkey-build-root-')));
const outside = mkdtempSync(join(tmpdir(), 'unkey-build-outside-'));
symlinkSync('/etc', join(root, 'etc-link'));
symlinkSync(outside, join(root, 'outside-link'));

function context(name: string, dockerfile: string): string {
  const dir = join(root, name);
  mkdirSync(dir);
  writeFileSync(join(dir, 'Dockerfile'), dockerfile);
  return dir;
}

// Records the names of the variables it got, then fails loudly unless the Dockerfile is good.
const buildCommand =
  'env | cut -d= -f1 | sort > env-names; ' +
  'if grep -q broken Dockerfile; then echo "db password=hunter2 $UNKEY_TEST_CTRL_SECRET" >&2; exit 3; fi; echo "registry.local/built:$UNKEY_DEPLOYMENT_ID"';
const log = captureLogger();
const t = await testCtrl({ buildCommand, buildRoot: root }, { logger: log.logger });

const finished = (id: string) =>
  until(async () => {
    const r = await t.api(`/v1/deployments/${id}`);
    return ['deploying', 'ready', 'failed'].includes(r.body.status) ? r : undefined;
  }, 20_000, 'build finished');

test('the build gets PATH, HOME and the three UNKEY_ build variables, nothing of ctrl', async () => {
  const dir = context('good', 'FROM scratch\n');
  const r = await t.api('/v1/deployments', { body: { buildContext: dir, regions: ['us-east-1'], replicas: 1 } });
  assert.equal(r.status, 202, r.text);
  const d = await finished(r.body.id);
  assert.equal(d.body.image, `registry.local/built:${r.body.id}`, d.text);
  const names = readFileSync(join(dir, 'env-names'), 'utf8').trim().split('\n');
  // sh itself adds PWD (and, depending on the shell, SHLVL and _).
  const shell = new Set(['PWD', 'SHLVL', '_', 'OLDPWD']);
  assert.deepEqual(names.filter((n) => !shell.has(n)), ['HOME', 'PATH', 'UNKEY_BUILD_CONTEXT', 'UNKEY_DEPLOYMENT_ID', 'UNKEY_IMAGE']);
});

test('a failing build says its exit code; its output reaches the log, not the API', async () => {
  const r = await t.api('/v1/deployments', { body: { buildContext: context('broken', 'FROM broken\n'), regions: ['us-east-1'], replicas: 1 } });
  assert.equal(r.status, 202, r.text);
  const d = await finished(r.body.id);
  assert.equal(d.body.status, 'failed');
  assert.match(d.body.error, /build failed \(exit code 3\)$/);
  for (const leaked of ['hunter2', 'ctrl-env-secret-5d1e']) assert.ok(!d.text.includes(leaked), `${leaked} reached the API: ${d.text}`);
  const list = await t.api('/v1/deployments?environmentId=default');
  assert.ok(!list.text.includes('hunter2'));
  const logged = log.lines.find((l) => l.includes('build failed') && l.includes(r.body.id));
  assert.ok(logged, 'the failure is logged with its deployment');
  assert.match(logged, /hunter2/, 'with the output, for the operator');
  assert.doesNotMatch(logged, /ctrl-env-secret-5d1e/, 'the build never had ctrl environment to print');
});

test('build contexts must lie under --build-root: a 400 naming buildContext, symlinks resolved', async () => {
  for (const bad of ['/etc', join(root, '..'), `${root}/../${outside.split('/').pop()}`, join(root, 'etc-link'), join(root, 'outside-link'), '../escape', join(root, 'missing')]) {
    const r = await t.api('/v1/deployments', { body: { buildContext: bad, regions: ['us-east-1'] } });
    assert.equal(r.status, 400, `${bad}: ${r.text}`);
    assert.deepEqual(r.body.error.details.map((x: { field: string }) => x.field), ['buildContext'], bad);
  }
  // A path relative to the root is fine.
  context('relative', 'FROM scratch\n');
  const ok = await t.api('/v1/deployments', { body: { buildContext: 'relative', regions: ['us-east-1'] } });
  assert.equal(ok.status, 202, ok.text);
});

test('--build-command needs --build-root', () => {
  assert.throws(
    () => loadConfig('ctrl', { databaseUrl: 'postgres://x/y', adminToken: 'a'.repeat(16), buildCommand: 'true' }, {}),
    (err: unknown) => err instanceof ConfigError && err.problems.some((p) => p.startsWith('--build-root (UNKEY_INFRA_BUILD_ROOT)')),
  );
});

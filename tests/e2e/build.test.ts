// The pluggable builder: a deployment from a build context runs ctrl's --build-command and
// deploys the image it names; a failing build fails the deployment saying how the build ended
// (its output goes to ctrl's log only: tests/http/build.test.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertEvery } from '../helpers/assert';
import { mkdtempSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { testStack, until } from '../helpers/stack';

// The "build" checks it runs in the context and that the workflow passed its variables.
const buildCommand =
  'test -f Dockerfile && test -n "$UNKEY_DEPLOYMENT_ID" && echo "building $UNKEY_BUILD_CONTEXT" && ' +
  'if grep -q broken Dockerfile; then echo "step 3/7: no such base image" >&2; exit 1; fi; echo "registry.local/built:$UNKEY_DEPLOYMENT_ID"';
const buildRoot = realpathSync(mkdtempSync(join(tmpdir(), 'unkey-build-root-')));
const stack = await testStack({ regions: ['us-east-1'], ctrl: { settings: { buildCommand, buildRoot } } });

function context(dockerfile: string): string {
  const dir = mkdtempSync(join(buildRoot, 'ctx-'));
  writeFileSync(join(dir, 'Dockerfile'), dockerfile);
  return dir;
}

const finished = (id: string) =>
  until(async () => {
    const r = await stack.api(`/v1/deployments/${id}`);
    return ['ready', 'failed'].includes(r.body.status) ? r.body : undefined;
  }, 20_000, 'deploy finished');

/** A deployment from a build context, created once by whichever test asks first. */
function fromContext(dockerfile: string): () => Promise<{ id: string; d: any }> {
  let made: Promise<{ id: string; d: any }> | undefined;
  return () =>
    (made ??= (async () => {
      const r = await stack.api('/v1/deployments', { body: { buildContext: context(dockerfile), regions: ['us-east-1'], replicas: 1 } });
      assert.equal(r.status, 202, JSON.stringify(r.body));
      return { id: r.body.id as string, d: await finished(r.body.id) };
    })());
}
// The file's two deploys; the metrics test reads what they leave, so each test passes alone
// and in any order (each asks for the deploys it needs).
const built = fromContext('FROM scratch\n');
const brokenBuild = fromContext('FROM broken\n');

test('a build context is built by the configured command and its image deployed', async () => {
  const { id, d } = await built();
  assert.equal(d.status, 'ready', d.error);
  assert.equal(d.image, `registry.local/built:${id}`);
  assert.ok(d.steps.some((s: any) => s.name === 'build'), 'the build is a journaled step');
  const [sts] = (await stack.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM instances WHERE deployment_id = ${id} AND status = 'running'`);
  assert.equal(sts!.n, 1);
});

test('a failing build fails the deployment saying how it ended; a missing context is a 400', async () => {
  const { d } = await brokenBuild();
  assert.equal(d.status, 'failed');
  assert.match(d.error, /build failed \(exit code 1\)/);
  assert.equal(d.topology.length, 0, 'nothing was deployed');

  const missing = await stack.api('/v1/deployments', { body: { buildContext: '/nonexistent/dir', regions: ['us-east-1'] } });
  assert.equal(missing.status, 400);
  assert.equal(missing.body.error.details[0].field, 'buildContext');
});

test('ctrl serves its OpenAPI document, reports the engine and the feed in /readyz, and exports feed and deployment metrics', async () => {
  await Promise.all([built(), brokenBuild()]);
  const doc = await fetch(`${stack.ctrl.url}/openapi.json`).then((r) => r.json() as Promise<any>);
  assert.equal(doc.openapi, '3.1.0');
  assert.ok(doc.paths['/v1/deployments'].post.requestBody.content['application/json'].schema.properties.regions);
  assert.ok(doc.paths['/v1/sentinel-rollouts']);
  assert.ok(doc.paths['/v1/regions'].get);
  const ready = await fetch(`${stack.ctrl.url}/readyz`).then((r) => r.json() as Promise<any>);
  assert.deepEqual(ready.checks.map((c: any) => c.name).sort(), ['database', 'engine', 'feed', 'migrations']);
  const metrics = await fetch(`${stack.ctrl.url}/metrics`).then((r) => r.text());
  assert.match(metrics, /^feed_tail_queries_total\{[^}]*\} [1-9]/m);
  assert.match(metrics, /^feed_open_streams\{/m);
  // Seed 001's deployment metrics, after the file's two deploys (one ready, one failed build).
  assert.match(metrics, /^deployment_workflow_status\{[^}]*status="ready"[^}]*\} [1-9]/m);
  assert.match(metrics, /^deployment_workflow_status\{[^}]*status="failed"[^}]*\} [1-9]/m);
  assert.match(metrics, /^deployment_build_duration_seconds_count\{[^}]*\} [1-9]/m);
  assert.match(metrics, /^deployment_instances_by_status\{[^}]*status="running"[^}]*\} 1$/m);
  assert.match(metrics, /^deployment_topology_regions\{[^}]*\} 1$/m);
  assertEvery(ready.checks, (c: any) => c.ok);
});

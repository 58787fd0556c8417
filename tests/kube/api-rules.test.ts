// krane against the simulator's real API rules, end to end through the dispatcher the watcher
// uses: a 403 quota, a 413 body and etcd's size limit fail that one resource (reported with its
// code) while the next resource still applies; a 429 with Retry-After is waited out and retried.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { Dispatcher } from '../../src/sync/dispatcher';
import type { PermanentError, ResourceRef } from '../../src/sync/wire';
import { controller, logger, startSim, until } from './helpers';
import { deploymentState } from './fixtures';

const { sim, api } = await startSim(10);
const ref = (id: string): ResourceRef => ({ type: 'deployment_topology', id, region: 'us-east-1' });

function dispatcher(sleeps: number[] = []) {
  const failures: { id: string; code?: string; message: string }[] = [];
  const d = new Dispatcher({
    controller: controller(api),
    concurrency: 2,
    logger,
    retries: 3,
    retryDelayMs: 1,
    onPermanentFailure: (r, err: PermanentError) => void failures.push({ id: r.id, code: err.code, message: err.message }),
    sleep: (ms) => {
      sleeps.push(ms);
      return new Promise((r) => setTimeout(r, Math.min(ms, 50)));
    },
  });
  return { d, failures };
}

const admin = (path: string, method: string, body?: unknown) =>
  fetch(`${sim.url}/_sim/${path}`, { method, headers: { 'content-type': 'application/json' }, body: body ? JSON.stringify(body) : undefined });
const exists = async (name: string) => !!(await api.get({ apiVersion: 'apps/v1', kind: 'StatefulSet', namespace: 'unkey', name }));

test('over the size limits: 413 and etcd\'s "request is too large" fail that resource only', async () => {
  const { d, failures } = dispatcher();
  await Promise.all([
    d.submit(ref('dep-huge'), deploymentState({ deploymentId: 'dep-huge', env: { BLOB: 'x'.repeat(3 * 1024 * 1024 + 10) } })),
    d.submit(ref('dep-big'), deploymentState({ deploymentId: 'dep-big', env: { BLOB: 'x'.repeat(2 * 1024 * 1024) } })),
    d.submit(ref('dep-fine'), deploymentState({ deploymentId: 'dep-fine' })),
  ]);
  assert.deepEqual(failures.map((f) => [f.id, f.code]).sort(), [['dep-big', 'ERR_KUBE_TOO_LARGE'], ['dep-huge', 'ERR_KUBE_TOO_LARGE']]);
  assert.ok(await exists('dep-fine'));
});

test('a ResourceQuota exceeded (403) fails that resource with the reason; the next one still applies after room is made', async () => {
  const { d, failures } = dispatcher();
  const used = (await api.list('apps/v1', 'StatefulSet', 'unkey')).items.length;
  await api.objects.create({ apiVersion: 'v1', kind: 'ResourceQuota', metadata: { name: 'sts-cap', namespace: 'unkey' }, spec: { hard: { 'count/statefulsets.apps': String(used) } } } as any);
  try {
    await d.submit(ref('dep-over'), deploymentState({ deploymentId: 'dep-over' }));
    assert.equal(failures.length, 1);
    assert.equal(failures[0]!.code, 'ERR_KUBE_FORBIDDEN');
    assert.match(failures[0]!.message, /exceeded quota: sts-cap/);
  } finally {
    await api.delete({ apiVersion: 'v1', kind: 'ResourceQuota', namespace: 'unkey', name: 'sts-cap' });
  }
  await d.submit(ref('dep-over'), deploymentState({ deploymentId: 'dep-over' }));
  assert.equal(failures.length, 1);
  assert.ok(await exists('dep-over'));
});

test('429 with Retry-After is waited out (at least as long as asked) and the apply goes through', async () => {
  const sleeps: number[] = [];
  const { d, failures } = dispatcher(sleeps);
  assert.equal((await admin('ratelimit', 'POST', { qps: 0.001, burst: 1, retryAfterSeconds: 2 })).status, 200);
  const applied = d.submit(ref('dep-throttled'), deploymentState({ deploymentId: 'dep-throttled' }));
  // Evidence of throttling first: the simulator counted a 429 and the dispatcher asked to wait.
  const limited = async () => ((await (await admin('ratelimit', 'GET')).json()) as { rateLimited: number }).rateLimited;
  await until(async () => sleeps.length > 0 && (await limited()) > 0, { what: 'a 429 answered and a wait asked for', show: () => ({ sleeps }) });
  assert.ok(sleeps.some((ms) => ms >= 2000), `waits honour Retry-After: ${JSON.stringify(sleeps)}`);
  assert.equal((await admin('ratelimit', 'DELETE')).status, 200);
  await applied;
  assert.deepEqual(failures, []);
  assert.ok(await exists('dep-throttled'));
});

// The chaos harness's hooks: fault injection for a while through /_sim/chaos, and the audit
// log of deletions at /_sim/audit/deletions.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { assertEvery } from '../helpers/assert';
import { PatchStrategy } from '@kubernetes/client-node';
import { errorOf, startSim, statefulSet, waitFor, type SimFixture } from './helpers';

let f: SimFixture;
before(async () => {
  f = await startSim();
});
after(async () => {
  await f.close();
});

const admin = async (method: string, path: string, body?: unknown) => {
  const res = await f.fetch(`${f.url}/_sim${path}`, { method, body: body === undefined ? undefined : JSON.stringify(body) });
  return { status: res.status, body: (await res.json()) as any };
};

test('chaos: 500s for the chosen verbs only, for a while; DELETE ends it', async () => {
  const r = await admin('POST', '/chaos', { mode: 'error', ratio: 1, durationMs: 60_000, verbs: ['list'] });
  assert.equal(r.status, 200);
  try {
    const e = await errorOf(f.core.listNamespacedConfigMap({ namespace: 'default' }));
    assert.equal(e.code, 500);
    assert.equal(e.body.reason, 'InternalError');
    assert.match(e.body.message, /^Internal error occurred: /);
    await f.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'still-works' } } });
  } finally {
    await admin('DELETE', '/chaos');
  }
  await f.core.listNamespacedConfigMap({ namespace: 'default' });
  const state = await admin('GET', '/chaos');
  assert.equal(state.body.rule, null);
  assert.equal(state.body.injected.error, 1);
});

test('chaos: 429 with Retry-After, limited to resources; expires by itself', async () => {
  // Checked under a rule that outlasts the test (then deleted): a 300 ms one could expire
  // between the POST and the GET on a slow machine.
  await admin('POST', '/chaos', { mode: 'throttle', ratio: 1, durationMs: 60_000, resources: ['secrets'], retryAfterSeconds: 3 });
  try {
    const raw = await f.fetch(`${f.url}/api/v1/namespaces/default/secrets`);
    assert.equal(raw.status, 429);
    assert.equal(raw.headers.get('retry-after'), '3');
    await f.core.listNamespacedConfigMap({ namespace: 'default' });
  } finally {
    await admin('DELETE', '/chaos');
  }
  // A short rule, never deleted: only "it ends by itself" is asserted, which holds however
  // late the checks run.
  const short = await admin('POST', '/chaos', { mode: 'throttle', ratio: 1, durationMs: 300, resources: ['secrets'], retryAfterSeconds: 3 });
  assert.equal(short.status, 200);
  assert.ok(short.body.rule.until > 0, JSON.stringify(short.body));
  await waitFor('rule expired', async () => (await f.fetch(`${f.url}/api/v1/namespaces/default/secrets`)).status === 200, 5_000, 50);
  assert.equal((await admin('GET', '/chaos')).body.rule, null, 'the expired rule is gone');
});

test('chaos: latency delays requests and then serves them; bad bodies get 400 naming each field', async () => {
  await admin('POST', '/chaos', { mode: 'latency', latencyMs: 150, durationMs: 60_000, verbs: ['get'] });
  try {
    await f.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: 'slow' } } });
    const got = await f.core.readNamespacedConfigMap({ name: 'slow', namespace: 'default' });
    assert.equal(got.metadata!.name, 'slow');
    assert.equal((await admin('GET', '/chaos')).body.injected.delay, 1);
  } finally {
    await admin('DELETE', '/chaos');
  }
  const bad = await admin('POST', '/chaos', { mode: 'explode', ratio: 2, verbs: 'get' });
  assert.equal(bad.status, 400);
  assert.deepEqual(bad.body.details.map((d: string) => d.split(':')[0]), ['mode', 'ratio', 'durationMs', 'verbs']);
  assert.equal((await admin('GET', '/chaos')).body.rule, null);
});

test('audit: deletions with who asked, cascades with their owner; read since a cursor; reset', async () => {
  await admin('DELETE', '/audit/deletions');
  await f.objects.patch(statefulSet('aud', 'nginx:1', 2) as any, undefined, undefined, 'krane', true, PatchStrategy.ServerSideApply);
  await waitFor('pods', async () => (await f.core.listNamespacedPod({ namespace: 'default', labelSelector: 'app=aud' })).items.length === 2);
  await f.apps.deleteNamespacedStatefulSet({ name: 'aud', namespace: 'default' });
  const log = await waitFor('audit entries', async () => {
    const r = (await admin('GET', '/audit/deletions')).body;
    return r.entries.length >= 3 ? r : undefined;
  });
  const sts = log.entries.find((e: any) => e.kind === 'StatefulSet');
  assert.equal(sts.cause, 'request');
  assert.equal(sts.namespace, 'default');
  assert.equal(sts.name, 'aud');
  assert.equal(sts.labels.app, 'aud');
  assert.ok(sts.userAgent, 'the client is named by its user agent');
  assert.ok(!Number.isNaN(Date.parse(sts.time)));
  const pods = log.entries.filter((e: any) => e.kind === 'Pod');
  assert.equal(pods.length, 2);
  for (const p of pods) {
    assert.equal(p.cause, 'cascade');
    assert.equal(p.owner.name, 'aud');
  }
  const later = (await admin('GET', `/audit/deletions?since=${sts.seq}`)).body;
  assertEvery(later.entries, (e: any) => e.seq > sts.seq);
  assert.equal((await admin('POST', '/audit/deletions/reset')).status, 200);
  assert.deepEqual((await admin('GET', '/audit/deletions')).body.entries, []);
});

test('audit is bounded: past the limit the oldest entries go and are counted', async () => {
  const small = await startSim({ auditLimit: 2 });
  try {
    for (let i = 0; i < 40; i++) {
      await small.core.createNamespacedConfigMap({ namespace: 'default', body: { metadata: { name: `c${i}` } } });
      await small.core.deleteNamespacedConfigMap({ name: `c${i}`, namespace: 'default' });
    }
    const r = (await (await fetch(`${small.url}/_sim/audit/deletions`)).json()) as any;
    assert.ok(r.entries.length <= 2 + 16);
    assert.equal(r.entries.length + r.dropped, 40);
    assert.equal(r.entries.at(-1).name, 'c39');
  } finally {
    await small.close();
  }
});

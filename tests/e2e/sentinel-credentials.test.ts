// The sentinels' credentials end to end (issue 24): krane reads --sentinel-secrets-file and keeps
// the Secret sentinel-credentials in the sentinel namespace in step with it; sentinel pods read it
// with envFrom; the Secret is repaired when deleted or changed by hand; and its values appear in
// no log line (ctrl's and krane's, captured at debug), no span, no API response, no feed line and
// no database row. Also the drift counters reaching GET /v1/regions and `regions ls`.
import { KubeClient } from '../../src/kube/client';
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { startTracing } from '../../src/tracing';
import { deploymentIn, testStack, until } from '../helpers/stack';
import { runCli } from '../helpers/cli';

const values = { DB_PASSWORD: `pw-${randomBytes(9).toString('hex')}`, REDIS_URL: `redis://:${randomBytes(9).toString('hex')}@redis:6379` };
const dir = mkdtempSync(join(tmpdir(), 'sentinel-creds-'));
const file = join(dir, 'credentials.env');
writeFileSync(file, `# test credentials\nDB_PASSWORD=${values.DB_PASSWORD}\nexport REDIS_URL="${values.REDIS_URL}"\n`);
const b64 = Object.fromEntries(Object.entries(values).map(([k, v]) => [k, Buffer.from(v).toString('base64')]));

const logLines: string[] = [];
const sink = new Writable({
  write(chunk, _enc, done) {
    logLines.push(String(chunk));
    done();
  },
});
// Every component's log at debug; the simulator's own log is the API server's, not ours.
const logger = pino({ level: 'debug' }, sink);
const spans = new InMemorySpanExporter();
const tracing = startTracing({ serviceName: 'test', exporter: spans });
after(() => tracing.shutdown());

const stack = await testStack({
  logger,
  krane: {
    settings: { sentinelSecretsFile: file },
    tuning: { minBackoffMs: 50, reporterRetryMs: 100, breakerResetMs: 500, heartbeatMs: 200 },
  },
});
const region = stack.regions.get('us-east-1')!;
// An admin's client: krane's own identity may not read the Secret (it lists, watches and patches it).
const kube = new KubeClient(region.sim.sim.kubeConfig());
const secretRef = { apiVersion: 'v1', kind: 'Secret', namespace: 'sentinel', name: 'sentinel-credentials' };
const secret = () => kube.get(secretRef) as Promise<any>;

function assertNowhere(where: string, text: string): void {
  for (const [k, v] of Object.entries(values)) {
    assert.ok(!text.includes(v), `${where} contains the value of ${k}`);
    assert.ok(!text.includes(b64[k]!), `${where} contains the base64 value of ${k}`);
  }
}

test('krane keeps sentinel-credentials from its file, labelled as managed', async () => {
  const s = await until(secret, 15_000, 'the Secret sentinel-credentials');
  assert.deepEqual(s.data, b64);
  assert.equal(s.metadata.labels['app.kubernetes.io/managed-by'], 'krane');
  assert.ok(s.metadata.managedFields.some((m: any) => m.manager === 'krane' && m.operation === 'Apply'), 'server-side applied by krane');
});

/** A ready deployment (and so the environment's sentinel), made by whichever test needs it
 *  first: each test asks for it, none relies on another having run. */
let ready: Promise<string> | undefined;
const readyDeployment = () =>
  (ready ??= (async () => {
    const r = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1 } });
    assert.equal(r.status, 202, JSON.stringify(r.body));
    await deploymentIn(stack, r.body.id, ['ready']);
    return r.body.id as string;
  })());

test('sentinel pods read the Secret with envFrom, and probe the image\'s health endpoint', async () => {
  await readyDeployment();
  const pods = (await kube.list('v1', 'Pod', 'sentinel', 'app.kubernetes.io/component=sentinel')).items as any[];
  assert.ok(pods.length > 0);
  for (const p of pods) {
    const c = p.spec.containers[0];
    assert.deepEqual(JSON.parse(JSON.stringify(c.envFrom)), [{ secretRef: { name: 'sentinel-credentials' } }]);
    assert.equal(c.readinessProbe.httpGet.path, '/_unkey/internal/health');
    assert.equal(c.livenessProbe.httpGet.port, 8040);
  }
});

test('the Secret is repaired when deleted or changed by hand', async () => {
  const before = await until(secret, { what: 'the Secret sentinel-credentials' });
  await kube.delete(secretRef);
  await until(async () => {
    const s = await secret();
    return s && s.metadata.uid !== before.metadata.uid && s.data.DB_PASSWORD === b64.DB_PASSWORD;
  }, 10_000, 'the Secret re-created');
  await kube.objects.patch({ ...{ apiVersion: 'v1', kind: 'Secret', metadata: { name: 'sentinel-credentials', namespace: 'sentinel' } }, data: { DB_PASSWORD: Buffer.from('stolen').toString('base64') } } as any, undefined, undefined, 'intruder', undefined, 'application/merge-patch+json');
  await until(async () => (await secret()).data.DB_PASSWORD === b64.DB_PASSWORD, 10_000, 'the value put back');
  const metrics = await (await fetch(`${region.krane.url}/metrics`)).text();
  assert.match(metrics, /krane_drift_repairs_total\{[^}]*kind="Secret"[^}]*\} [1-9]/);
});

test('a hand scale is repaired and shown in GET /v1/regions and regions ls', async () => {
  const id = await readyDeployment();
  const sts = (await kube.list('apps/v1', 'StatefulSet', 'unkey', `unkey.com/deployment.id=${id}`)).items[0] as any;
  assert.ok(sts, `the StatefulSet of ${id}`);
  const repairedBefore = ((await stack.api('/v1/regions')).body as any[]).find((x) => x.name === 'us-east-1').drift.repaired as number;
  await kube.objects.patch({ apiVersion: 'apps/v1', kind: 'StatefulSet', metadata: { name: sts.metadata.name, namespace: 'unkey' }, spec: { replicas: 4 } } as any, undefined, undefined, 'intruder', undefined, 'application/merge-patch+json');
  const view = await until(async () => {
    const list = (await stack.api('/v1/regions')).body as any[];
    const us = list.find((x) => x.name === 'us-east-1');
    return us.drift.lastObject === `StatefulSet unkey/${sts.metadata.name}` ? us : undefined;
  }, 15_000, 'the repair reported');
  assert.ok(view.drift.repaired > repairedBefore, `repairs counted: ${repairedBefore} before, ${view.drift.repaired} after`);
  assert.ok(Date.parse(view.drift.lastAt) > Date.now() - 60_000);
  const out = await runCli(['regions', 'ls', '--api', stack.ctrl.url, '--token', stack.adminToken]);
  assert.match(out.stdout, /DRIFT REPAIRED/);
  assert.match(out.stdout, new RegExp(`StatefulSet unkey/${sts.metadata.name}`));
  const metrics = await (await fetch(`${region.krane.url}/metrics`)).text();
  assert.match(metrics, /krane_drift_repairs_total\{[^}]*kind="StatefulSet"[^}]*\} [1-9]/);
});

test('the values appear in no log, span, API response, feed line or database row', async () => {
  const deploymentId = await readyDeployment();
  await tracing.flush();
  assert.ok(logLines.length > 50 && logLines.some((l) => l.includes('sentinel credentials secret applied')), 'logs were captured');
  assertNowhere('the logs', logLines.filter((l) => !l.includes('"mode":"kube-sim"')).join(''));
  const finished = spans.getFinishedSpans();
  assert.ok(finished.length > 0, 'spans were captured');
  assertNowhere('the spans', JSON.stringify(finished.map((s) => ({ name: s.name, attributes: s.attributes, events: s.events, status: s.status }))));
  for (const path of ['/v1/regions', `/v1/deployments/${deploymentId}`, '/v1/sentinels', '/v1/invocations']) {
    const r = await stack.api(path);
    assert.equal(r.status, 200, path);
    assertNowhere(path, JSON.stringify(r.body));
  }
  // A full sync, read until its snapshot_end (the stream then stays open for changes).
  const ctl = new AbortController();
  const feed = await fetch(`${stack.ctrl.url}/v1/cluster/changes`, { headers: { authorization: `Bearer ${region.token}` }, signal: ctl.signal });
  let text = '';
  const decoder = new TextDecoder();
  for await (const chunk of feed.body as unknown as AsyncIterable<Uint8Array>) {
    text += decoder.decode(chunk, { stream: true });
    if (text.includes('"snapshot_end"')) break;
  }
  ctl.abort();
  assert.match(text, /"sentinel"/, 'the feed carried the sentinel');
  assertNowhere('the feed', text);
  const tables = await stack.db.sql<{ t: string }[]>`SELECT table_name AS t FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`;
  for (const { t } of tables) {
    const rows = await stack.db.sql.unsafe(`SELECT coalesce(string_agg(x::text, E'\\n'), '') AS dump FROM "${t}" x`);
    assertNowhere(`table ${t}`, String(rows[0]?.dump ?? ''));
  }
});

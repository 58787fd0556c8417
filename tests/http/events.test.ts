// The live event WebSocket and its NOTIFY transport (issue 16 items 4 and 7): the credential
// is checked before anything else, a duplicated query parameter is a 400 (not a 500 with a
// stack), and an event too big for a NOTIFY payload never fails the write that publishes it.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import WebSocket from 'ws';
import { deployments, events, withTx } from '../../src/store';
import { until } from '../helpers/wait';
import { captureLogger, testCtrl } from './helpers';

const log = captureLogger('warn');
const t = await testCtrl({}, { logger: log.logger });
const wsUrl = (query: string) => `${t.url.replace('http', 'ws')}/v1/events${query}`;

const admin = () => ({ authorization: `Bearer ${t.adminToken}` });

function open(query: string, headers: Record<string, string> = admin()): Promise<{ ws: WebSocket; got: any[] }> {
  const ws = new WebSocket(wsUrl(query), { headers });
  const got: any[] = [];
  ws.on('message', (d) => got.push(JSON.parse(String(d))));
  after(() => ws.close());
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws, got }));
    ws.once('unexpected-response', (_req, res) => reject(Object.assign(new Error(`status ${res.statusCode}`), { status: res.statusCode })));
    ws.once('error', reject);
  });
}

const insert = (id: string) =>
  deployments.insertDeployment(t.db.sql, {
    id, workspaceId: 'default', projectId: 'default', appId: 'default', environmentId: 'default',
    image: 'img:1', buildContext: null, cpuMillicores: 100, memoryMib: 128, replicas: 1, port: 8080, command: [], env: {}, regions: ['us-east-1'],
  });

test('the WebSocket refuses a missing or wrong token before upgrading, and serves the right one', async () => {
  await assert.rejects(open('', {}), (e: any) => e.status === 401);
  await assert.rejects(open('', { authorization: 'Bearer wrong-token-wrong-token' }), (e: any) => e.status === 401);
  const { got } = await open('');
  await until(() => got.some((e) => e.type === 'hello'), 10_000, 'hello');
});

test('a duplicated query parameter is a 400 naming it, and logs no error', async () => {
  for (const q of ['?type=a&type=b', '?deploymentId=a&deploymentId=b']) {
    const r = await fetch(`${t.url}/v1/events${q}`, { headers: admin() });
    assert.equal(r.status, 400, q);
    const body = (await r.json()) as any;
    assert.equal(body.error.code, 'ERR_VALIDATION_INVALID', q);
    assert.match(body.error.details[0].field, /^(type|deploymentId)$/, q);
  }
  const refused = await open('?type=a&type=b').catch((e) => e);
  assert.equal(refused.status, 400);
  assert.equal(log.lines.filter((l) => l.includes('"level":50')).length, 0, `no error logged: ${log.lines.join('')}`);
});

test('filters pick events by deployment and type prefix', async () => {
  const { got } = await open('?deploymentId=dep-filter-a&type=deployment.status');
  await insert('dep-filter-a');
  await insert('dep-filter-b');
  await deployments.setDeploymentStatus(t.db.sql, 'dep-filter-b', 'deploying');
  await deployments.setDeploymentStatus(t.db.sql, 'dep-filter-a', 'deploying');
  await until(() => got.some((e) => e.type === 'deployment.status'), 10_000, 'status event');
  assert.deepEqual(got.filter((e) => e.type !== 'hello').map((e) => `${e.deploymentId}:${e.status}`), ['dep-filter-a:deploying']);
});

test('a status with an error longer than a NOTIFY payload is written, and its event arrives shortened and marked', async () => {
  const { got } = await open('?deploymentId=dep-long');
  await insert('dep-long');
  const long = `instances failed: ${'é'.repeat(9000)}`;
  await withTx(t.db.sql, (tx) => deployments.setDeploymentStatus(tx, 'dep-long', 'failed', long));
  const row = await deployments.getDeployment(t.db.sql, 'dep-long');
  assert.equal(row!.status, 'failed');
  assert.equal(row!.error, long, 'the row keeps the whole error');
  const e = await until(() => got.find((x) => x.type === 'deployment.status'), 10_000, 'event');
  assert.ok(Buffer.byteLength(JSON.stringify(e)) < 8000);
  assert.ok(e.error.startsWith('instances failed: é'));
  assert.match(e.error, /… \(truncated\)$/);
  // Many long events in one statement (status reports) are bounded the same way.
  await events.publishEvents(t.db.sql, [
    { type: 'deployment.region', deploymentId: 'dep-long', region: 'us-east-1', wanted: 1, running: 0, failed: 1, reason: 'x'.repeat(20_000) },
  ]);
  await until(() => got.find((x) => x.type === 'deployment.region'), 10_000, 'region event');
});

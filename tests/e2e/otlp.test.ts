// ctrl and krane as real processes (the bundle) with --otlp-endpoint (ctrl) and the standard
// OTEL_EXPORTER_OTLP_ENDPOINT (krane) pointing at a small OTLP/HTTP receiver in this test: one
// deployment arrives as one trace holding seed 001's whole tree, ctrl's spans and krane's.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import { once } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import type { ChildProcess } from 'node:child_process';
import { testDb } from '../helpers/db';
import { cleanEnv, outputLines, spawnBundle, waitForHttp } from '../helpers/bundle';
import { adminApi } from '../helpers/ctrl-process';
import { freePort } from '../helpers/postgres';
import { until } from '../helpers/stack';
import { loadConfig } from '../../src/config';
import { startKubeSim } from '../../src/modes/kube-sim';

interface ReceivedSpan {
  service: string;
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  attributes: Record<string, unknown>;
}

/** OTLP/HTTP JSON (ExportTraceServiceRequest): resourceSpans → scopeSpans → spans. */
function startReceiver(): Promise<{ url: string; spans: ReceivedSpan[]; contentTypes: Set<string> }> {
  const spans: ReceivedSpan[] = [];
  const contentTypes = new Set<string>();
  const server = createServer((req, res) => {
    let body = '';
    req.on('data', (d) => (body += d));
    req.on('end', () => {
      contentTypes.add(`${req.method} ${req.url} ${req.headers['content-type']}`);
      const doc = JSON.parse(body || '{}');
      for (const rs of doc.resourceSpans ?? []) {
        const service = rs.resource?.attributes?.find((a: any) => a.key === 'service.name')?.value?.stringValue;
        for (const ss of rs.scopeSpans ?? []) {
          for (const s of ss.spans ?? []) {
            const attributes = Object.fromEntries((s.attributes ?? []).map((a: any) => [a.key, Object.values(a.value ?? {})[0]]));
            spans.push({ service, name: s.name, traceId: s.traceId, spanId: s.spanId, parentSpanId: s.parentSpanId ?? '', attributes });
          }
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  after(() => server.close());
  return new Promise((resolve) => server.listen(0, '127.0.0.1', () => resolve({ url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, spans, contentTypes })));
}

// The batch exporter's default 5 s delay only slows the tests down.
const FAST = { OTEL_BSP_SCHEDULE_DELAY: '100' };
const region = 'us-east-1';
const adminToken = 'admin-token-for-otlp-test';
const agentToken = 'agent-token-for-otlp-test';
const children = new Set<ChildProcess>();
after(() => children.forEach((c) => c.kill('SIGKILL')));

/** ctrl (--otlp-endpoint) and one krane (OTEL_EXPORTER_OTLP_ENDPOINT) as processes of the
 *  bundle, on a fresh database, with a simulated cluster whose pods are ready after `readyDelay`. */
async function startSystem(receiverUrl: string, readyDelay: number, ctrlEnv: Record<string, string> = {}) {
  const db = await testDb();
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const env = cleanEnv({
    ...FAST,
    ...ctrlEnv,
    UNKEY_INFRA_DATABASE_URL: db.url,
    UNKEY_INFRA_ADMIN_TOKEN: adminToken,
    UNKEY_INFRA_AGENT_TOKENS: `${region}=${agentToken}`,
    UNKEY_INFRA_LISTEN: `127.0.0.1:${port}`,
    UNKEY_INFRA_LOG_LEVEL: 'warn',
  });
  const startCtrl = async () => {
    const ctrl = spawnBundle(['ctrl', '--otlp-endpoint', receiverUrl], { env });
    children.add(ctrl);
    await waitForHttp(`${url}/readyz`);
    return ctrl;
  };
  const ctrl = await startCtrl();

  const kubeconfig = join(mkdtempSync(join(tmpdir(), 'otlp-kube-')), 'kubeconfig');
  const sim = await startKubeSim(loadConfig('kubeSim', { port: 0, readyDelay, logLevel: 'silent', kubeconfigOut: kubeconfig }, {}), { minReadyScale: 0.001 });
  after(() => sim.close());
  const kranePort = await freePort();
  const krane = spawnBundle(
    ['krane', '--region', region, '--control-plane', url, '--token', agentToken, '--kubeconfig', kubeconfig, '--listen', `127.0.0.1:${kranePort}`, '--leader-elect', 'false', '--log-level', 'debug'],
    { env: cleanEnv({ ...FAST, OTEL_EXPORTER_OTLP_ENDPOINT: receiverUrl }) },
  );
  children.add(krane);
  const kraneLog = outputLines(krane);
  // Connected and past its first full sync, so the deployment reaches it as a change (a
  // snapshot line carries no traceparent: it is the resource's state, not a write).
  await waitForHttp(`http://127.0.0.1:${kranePort}/readyz`, 200, 20_000);

  const api = adminApi(url, adminToken);
  const finished = (id: string) => {
    // What the deployment last was, for the message of a wait that runs out.
    let last: unknown;
    return until(
      async () => {
        const r = await api(`/v1/deployments/${id}`);
        last = r.body;
        return ['ready', 'failed'].includes(r.body.status) ? r.body : undefined;
      },
      { what: 'deploy finished', show: () => last },
    );
  };
  return { db, ctrl, startCtrl, kraneLog, api, finished, sim: sim.sim };
}

/** A log line as JSON, or nothing for a line that is not. */
function jsonLine(l: string): any[] {
  try {
    return [JSON.parse(l)];
  } catch {
    return [];
  }
}

/** Waits until the receiver holds every name of `tree` in the trace; returns the trace's spans. */
function received(receiver: { spans: ReceivedSpan[] }, traceId: string, tree: string[]): Promise<ReceivedSpan[]> {
  return until(
    () => {
      const mine = receiver.spans.filter((s) => s.traceId === traceId);
      return tree.every((n) => mine.some((s) => s.name === n)) ? mine : undefined;
    },
    { what: `the spans ${tree.join(', ')} of trace ${traceId} in the receiver`, show: () => receiver.spans.map((s) => [s.service, s.name, s.traceId]) },
  );
}

test('ctrl and krane export one trace per deployment to an OTLP/HTTP receiver: the whole tree, across the feed', async () => {
  const receiver = await startReceiver();
  const { api, finished, kraneLog } = await startSystem(receiver.url, 50);

  const created = await api('/v1/deployments', { image: 'nginx:1.27', regions: [region], replicas: 1 });
  assert.equal(created.status, 202, JSON.stringify(created.body));
  const d = await finished(created.body.id);
  assert.equal(d.status, 'ready', d.error);
  const traceId: string = d.traceId;
  assert.match(traceId, /^[0-9a-f]{32}$/);

  const tree = ['deployment.workflow', 'deployment.topology.create', 'deployment.events.emit', 'deployment.status.poll', 'sentinel.deploy', `deployment.apply.${region}`];
  const spans = await received(receiver, traceId, tree);

  const root = spans.find((s) => s.name === 'deployment.workflow')!;
  assert.equal(root.service, 'ctrl');
  assert.equal(root.parentSpanId, '');
  assert.equal(root.attributes['deployment.id'], d.id);
  assert.equal(root.attributes['environment.id'], 'default');
  for (const name of ['deployment.topology.create', 'deployment.events.emit', 'deployment.status.poll', 'sentinel.deploy']) {
    const s = spans.find((x) => x.name === name)!;
    assert.equal(s.service, 'ctrl', name);
    assert.equal(s.parentSpanId, root.spanId, `${name} under the workflow span`);
  }
  const emit = spans.find((s) => s.name === 'deployment.events.emit')!;
  // The change may be applied more than once in its trace (a resync, a drift repair re-sending
  // it): every apply is krane's and continues the trace the change carried.
  const applies = spans.filter((s) => s.name === `deployment.apply.${region}`);
  for (const apply of applies) {
    assert.equal(apply.service, 'krane', 'exported by krane');
    assert.equal(apply.parentSpanId, emit.spanId, 'krane continued the trace the change carried');
  }
  // krane's log line inside its apply span carries the same ids. The line is written while
  // the span is open, so the span reaches the receiver after it (the exporter's next batch):
  // wait for the span the line names, then check it is an apply continuing the trace.
  const logged = await until(() => kraneLog.flatMap(jsonLine).find((l) => l.msg === 'resource handled' && l.trace_id === traceId), {
    what: 'a krane log line with the trace id',
    show: () => kraneLog.slice(-5),
  });
  const named = await until(() => receiver.spans.find((s) => s.spanId === logged.span_id), {
    what: `the span ${logged.span_id} the log line names`,
    show: () => receiver.spans.filter((s) => s.traceId === traceId).map((s) => [s.name, s.spanId]),
  });
  assert.equal(named.name, `deployment.apply.${region}`);
  assert.equal(named.service, 'krane');
  assert.equal(named.parentSpanId, emit.spanId, 'the logged apply continued the trace the change carried');
});

test('ctrl SIGKILLed mid-deploy and started again: the deploy keeps its trace, and no span arrives twice', async () => {
  const receiver = await startReceiver();
  // A short lease, so the new process takes the invocation over in about a second.
  const sys = await startSystem(receiver.url, 50, { UNKEY_INFRA_ENGINE_LEASE: '1500ms' });
  // The deployment's pods are held by the simulator until ctrl has been killed and started
  // again, so the deploy is waiting for them when ctrl dies, however slow this machine is.
  sys.sim.holdImage('nginx:1.26');
  const created = await sys.api('/v1/deployments', { image: 'nginx:1.26', regions: [region], replicas: 1 });
  assert.equal(created.status, 202, JSON.stringify(created.body));
  const id = created.body.id as string;
  const traceId = (await sys.api(`/v1/deployments/${id}`)).body.traceId as string;
  await received(receiver, traceId, ['deployment.events.emit', `deployment.apply.${region}`]);
  const [mid] = await sys.db.sql<{ status: string }[]>`SELECT status FROM deployments WHERE id = ${id}`;
  assert.notEqual(mid!.status, 'ready', 'killed before the deploy finished');
  sys.ctrl.kill('SIGKILL');
  await once(sys.ctrl, 'exit');

  await sys.startCtrl();
  sys.sim.releaseImage('nginx:1.26');
  const d = await sys.finished(id);
  assert.equal(d.status, 'ready', d.error);
  assert.equal(d.traceId, traceId);
  const spans = await received(receiver, traceId, ['deployment.workflow']);
  const count = (name: string) => spans.filter((s) => s.name === name).length;
  for (const name of ['deployment.workflow', 'deployment.topology.create', 'deployment.events.emit', 'sentinel.deploy']) assert.equal(count(name), 1, name);
  assert.equal(new Set(spans.map((s) => s.spanId)).size, spans.length, 'no span exported twice');
  const [inv] = await sys.db.sql<{ id: string; leaseEpoch: number }[]>`
    SELECT id, lease_epoch FROM engine_invocations WHERE service = 'DeployService' AND object_key = ${id} AND handler = 'deploy'`;
  assert.ok(inv!.leaseEpoch >= 2, 'the new process replayed the invocation');
  const [checks] = await sys.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM engine_journal WHERE invocation_id = ${inv!.id} AND name = 'check'`;
  // Each journaled check ran once; one run by the killed process may not have been exported.
  assert.ok(count('deployment.status.poll') <= checks!.n && count('deployment.status.poll') >= 1, `${count('deployment.status.poll')} polls, ${checks!.n} checks`);
  const root = spans.find((s) => s.name === 'deployment.workflow')!;
  for (const s of spans.filter((x) => x.service === 'ctrl' && x.name !== 'deployment.workflow')) assert.equal(s.parentSpanId, root.spanId, s.name);
});

// `unkey-infra dev --outbound-allow HOST:PORT,…` (issue 23): the embedded ctrl takes ctrl's
// outbound allow-list, so a newcomer can gate a canary on a Prometheus running on the laptop.
// Without it the loopback query is refused by the SSRF policy and the gate can only fail closed
// as "inconclusive"; with it the gate reads the value and judges it.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ConfigError, loadConfig } from '../../src/config';
import { until } from '../helpers/wait';
import { startStandInPrometheus } from '../helpers/prometheus-stand-in';
import { startDev } from './helpers';

test('dev --outbound-allow parses like ctrl\'s and names the option when malformed', () => {
  assert.deepEqual(loadConfig('dev', { outboundAllow: '127.0.0.1:9090,[::1]' }, {}).outboundAllow, [
    { host: '127.0.0.1', port: 9090 },
    { host: '::1', port: null },
  ]);
  assert.deepEqual(loadConfig('dev', {}, { UNKEY_INFRA_OUTBOUND_ALLOW: 'prom.local:9090' }).outboundAllow, [{ host: 'prom.local', port: 9090 }]);
  assert.throws(() => loadConfig('dev', { outboundAllow: 'a b:99999' }, {}), (e: unknown) => e instanceof ConfigError && /--outbound-allow/.test(e.problems.join('\n')));
});

test('dev --outbound-allow 127.0.0.1:PORT: a canary gated on a local Prometheus is judged by its value (rolled back: above the maximum)', async () => {
  const prom = await startStandInPrometheus(0.9);
  after(() => prom.close());
  const cwd = mkdtempSync(join(tmpdir(), 'unkey-dev-outbound-'));
  after(() => rmSync(cwd, { recursive: true, force: true }));
  const port = new URL(prom.url).port;
  const run = await startDev(['--regions', 'us-east-1', '--ready-delay', '50', '--listen', '127.0.0.1:0', '--outbound-allow', `127.0.0.1:${port}`], { cwd });
  const api = async (path: string, body?: unknown) => {
    const r = await fetch(run.apiUrl + path, {
      method: body === undefined ? 'GET' : 'POST',
      headers: { authorization: `Bearer ${run.adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
      ...(body === undefined ? {} : { body: JSON.stringify(body) }),
    });
    return { status: r.status, body: (await r.json()) as any };
  };
  const settled = (id: string) =>
    until(async () => {
      const d = (await api(`/v1/deployments/${id}`)).body;
      return ['ready', 'failed', 'rolled_back'].includes(d.status) ? d : undefined;
    }, 60_000, `${id} settled`, 100);
  const base = { image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1 };
  const stable = await api('/v1/deployments', base);
  assert.equal(stable.status, 202, JSON.stringify(stable.body));
  assert.equal((await settled(stable.body.id)).status, 'ready');
  const analysis = { interval: '500ms', failureLimit: 1, prometheus: { url: prom.url, query: 'app_error_ratio', max: 0.05 } };
  const canary = await api('/v1/deployments', { ...base, strategy: { type: 'canary', steps: [{ weight: 20, pause: '30s' }], analysis } });
  assert.equal(canary.status, 202, JSON.stringify(canary.body));
  const d = await settled(canary.body.id);
  assert.equal(d.status, 'rolled_back');
  assert.match(d.error, /0\.9 is above the maximum 0\.05/, 'the query reached the local Prometheus and its value was judged');
  assert.ok(prom.queries() > 0);
});

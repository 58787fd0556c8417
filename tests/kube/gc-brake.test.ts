// The GC brake: an empty or wrong database must never empty a region. A full sync that would
// delete more than --gc-max-fraction of krane's managed objects (and more than 10) is refused,
// counted, and reported to ctrl, until an operator confirms; then GC runs.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startKrane } from '../../src/modes/krane';
import { confirmKraneGc } from '../../src/cli/krane-gc';
import type { KraneConfig } from '../../src/config';
import type { ResourceRef } from '../../src/sync/wire';
import { controller, logger, startSim, until } from './helpers';
import { deploymentState } from './fixtures';

const TOKEN = 'tok-gc-brake-0123456789abcdef';
const { sim, api } = await startSim(10);

/** A ctrl whose every full sync mentions nothing, and which records krane's reports. */
async function emptyFeedCtrl() {
  const reports: { path: string; body: any }[] = [];
  let fullSyncs = 0;
  const server = createServer((req, res) => {
    const url = new URL(req.url!, 'http://x');
    if (req.method === 'GET' && url.pathname === '/v1/cluster/changes') {
      res.writeHead(200, { 'content-type': 'application/x-ndjson' });
      if (!url.searchParams.get('cursor')) {
        fullSyncs++;
        res.end('{"type":"snapshot_begin"}\n{"type":"snapshot_end","cursor":"e:1:1","count":0}\n{"type":"end","cursor":"e:1:1"}\n');
      } else {
        const t = setTimeout(() => res.end('{"type":"end","cursor":"e:1:1"}\n'), 100);
        res.on('close', () => clearTimeout(t));
      }
      return;
    }
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      reports.push({ path: url.pathname, body: data ? JSON.parse(data) : null });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  after(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, reports, fullSyncs: () => fullSyncs };
}

const statefulSets = async () => (await api.list('apps/v1', 'StatefulSet', 'unkey', 'app.kubernetes.io/managed-by=krane')).items.length;
const services = async () => (await api.list('v1', 'Service', 'unkey', 'app.kubernetes.io/managed-by=krane')).items.length;

test('a full sync that mentions none of 20 managed objects deletes nothing until an operator confirms', async () => {
  const ctl = controller(api);
  for (let i = 0; i < 10; i++) {
    const id = `dep-brake-${i}`;
    const ref: ResourceRef = { type: 'deployment_topology', id, region: 'us-east-1' };
    await ctl.apply(ref, deploymentState({ deploymentId: id, replicas: 0 }));
  }
  assert.equal((await statefulSets()) + (await services()), 20);

  const ctrl = await emptyFeedCtrl();
  const cfg = {
    region: 'us-east-1', controlPlane: ctrl.url, token: TOKEN, listen: { host: '127.0.0.1', port: 0 }, resyncInterval: 60_000, logLevel: 'silent', gcMaxFraction: 0.5,
  } as KraneConfig;
  const krane = await startKrane(cfg, { logger, kubeConfig: sim.kubeConfig(), tuning: { reporterFlushMs: 10 } });
  try {
    // The first full sync completed (readiness waits for it): its GC pass has run by then.
    await until(async () => (await fetch(`${krane.url}/readyz`)).status === 200);
    assert.equal((await statefulSets()) + (await services()), 20, 'nothing deleted');
    const held = await until(() => ctrl.reports.find((r) => r.path === '/v1/cluster/region/status' && r.body.gc?.held));
    assert.deepEqual({ ...held.body.gc, at: undefined }, { held: true, wouldDelete: 20, managed: 20, maxFraction: 0.5, at: undefined });
    const metrics = await (await fetch(`${krane.url}/metrics`)).text();
    assert.match(metrics, /krane_gc_refused_total\{[^}]*\} 1/);
    assert.match(metrics, /krane_gc_held\{[^}]*\} 20/);

    // Wrong token: refused. Right token: the brake lifts for what was held, and a full sync runs.
    assert.equal((await fetch(`${krane.url}/gc/confirm`, { method: 'POST', headers: { authorization: 'Bearer nope' } })).status, 401);
    // What `unkey-infra krane gc --confirm` sends.
    const approved = await confirmKraneGc({ listen: { host: '127.0.0.1', port: Number(new URL(krane.url).port) }, token: TOKEN });
    assert.equal(approved, 20);
    await until(async () => (await statefulSets()) + (await services()) === 0, 10_000);
    await until(() => ctrl.reports.some((r) => r.path === '/v1/cluster/region/status' && r.body.gc && !r.body.gc.held));
    assert.ok(ctrl.fullSyncs() >= 2, 'the confirmation started a new full sync');
  } finally {
    await krane.close();
  }
});

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, KubeConfig, makeInformer, type V1Service } from '@kubernetes/client-node';
import { startKubeSim } from '../../src/modes/kube-sim';
import { startSim, waitFor } from './helpers';
import { within } from '../helpers/wait';

test('startKubeSim writes a kubeconfig another client loads from disk', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'kube-sim-'));
  const path = join(dir, 'nested', 'kubeconfig');
  const handle = await startKubeSim({ port: 0, host: '127.0.0.1', readyDelay: 5, kubeconfigOut: path, logLevel: 'silent', noCilium: false });
  try {
    assert.equal(handle.kubeconfigPath, path);
    assert.match(handle.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    // https: kubectl sends no credentials to a plain http:// server; TLS is on the same port.
    assert.ok((await readFile(path, 'utf8')).includes(handle.url.replace('http:', 'https:')));
    const kc = new KubeConfig();
    kc.loadFromFile(path);
    const core = kc.makeApiClient(CoreV1Api);
    const names = (await core.listNamespace()).items.map((n) => n.metadata?.name);
    assert.ok(names.includes('default'));
    assert.equal(kc.getCurrentUser()?.token, 'kube-sim-token');
  } finally {
    await handle.close();
    await rm(dir, { recursive: true, force: true });
  }
});

test('the client informer gets 410 after compaction, relists, and keeps its cache right', async () => {
  const f = await startSim();
  // What the informer did, in order: every wait and the cleanup below fail with it (after the
  // safety net) instead of holding the file; once the whole file hung for the runner's 7
  // minutes here, with nothing to show.
  const log: string[] = [];
  const t0 = Date.now();
  const note = (s: string) => void log.push(`${Date.now() - t0}ms ${s}`);
  const show = () => ({ log, lists: f.sim.stats.snapshot().byVerb.list });
  const informer = makeInformer(f.kc, '/api/v1/namespaces/default/services', () => {
    note('list');
    return f.core.listNamespacedService({ namespace: 'default' });
  });
  let stopped = false;
  try {
    const added: string[] = [];
    const deleted: string[] = [];
    informer.on('add', (s: V1Service) => (added.push(s.metadata!.name!), note(`add ${s.metadata!.name}`)));
    informer.on('delete', (s: V1Service) => (deleted.push(s.metadata!.name!), note(`delete ${s.metadata!.name}`)));
    informer.on('connect', () => note(`connect rv=${(informer as unknown as { latestResourceVersion(): string }).latestResourceVersion() || '(none)'}`));
    // client-node stops an informer whose watch ends in an error, which a dropped connection
    // can be; restarting it is the library's documented use, and it relists like any reconnect.
    // (Without it the wait below timed out once in CI, and the informer left running kept the
    // test file from ever exiting.)
    informer.on('error', (err: { statusCode?: number; message?: string }) => {
      note(`error ${err?.statusCode ?? ''} ${err?.message ?? err}`);
      setTimeout(() => void (stopped || informer.start().catch((e: Error) => note(`restart failed ${e.message}`))), 100);
    });
    await within(informer.start(), 'the informer started', { show });
    const svc = (name: string) => ({ apiVersion: 'v1', kind: 'Service', metadata: { name, namespace: 'default' }, spec: { ports: [{ port: 80 }] } });
    await within(f.objects.create(svc('before') as any), 'create before', { show });
    await waitFor(() => added.includes('before'), { what: 'add before', show });
    const listsBefore = f.sim.stats.snapshot().byVerb.list;

    // Expire every resourceVersion and drop the watch: the informer reconnects from its last
    // resourceVersion, gets 410 Expired, and must relist to see what changed meanwhile.
    await within(f.core.deleteNamespacedService({ name: 'before', namespace: 'default' }), 'delete before', { show });
    note('compact');
    const res = await within(f.fetch(`${f.url}/_sim/compact`, { method: 'POST', body: JSON.stringify({ dropWatches: true }) }), 'compact', { show });
    assert.equal(res.status, 200);
    await within(f.objects.create(svc('after') as any), 'create after', { show });
    await waitFor(() => added.includes('after') && f.sim.stats.snapshot().byVerb.list > listsBefore, { what: 'relisted', show });
    assert.ok(deleted.includes('before'), JSON.stringify(show()));
    assert.deepEqual(informer.list().map((s) => s.metadata?.name), ['after']);
  } finally {
    stopped = true;
    await within(informer.stop(), 'the informer stopped', { show });
    await within(f.close(), 'the simulator closed', { show });
  }
});

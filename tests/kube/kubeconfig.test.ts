// Where krane finds its cluster (README: --kubeconfig, else in-cluster credentials in a pod,
// else $KUBECONFIG / ~/.kube/config): loadKubeConfig as krane calls it, one case per source.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadKubeConfig } from '../../src/kube/client';
import { runsInCluster } from '../../src/config';

const dir = mkdtempSync(join(tmpdir(), 'unkey-kubeconfig-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function kubeconfigFile(name: string, server: string): string {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify({
    apiVersion: 'v1', kind: 'Config', 'current-context': name,
    clusters: [{ name, cluster: { server } }],
    users: [{ name, user: { token: 'x' } }],
    contexts: [{ name, context: { cluster: name, user: name } }],
  }));
  return path;
}

/** Runs `fn` with environment variables set, restoring them after. */
function withEnv<T>(vars: Record<string, string | undefined>, fn: () => T): T {
  const saved = Object.fromEntries(Object.keys(vars).map((k) => [k, process.env[k]]));
  for (const [k, v] of Object.entries(vars)) if (v === undefined) delete process.env[k]; else process.env[k] = v;
  try {
    return fn();
  } finally {
    for (const [k, v] of Object.entries(saved)) if (v === undefined) delete process.env[k]; else process.env[k] = v;
  }
}

const fromEnv = kubeconfigFile('from-env', 'https://from-env.example:6443');
const fromFlag = kubeconfigFile('from-flag', 'https://from-flag.example:6443');

test('--kubeconfig wins over $KUBECONFIG and over running in a pod', () => {
  withEnv({ KUBECONFIG: fromEnv, KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '443' }, () => {
    const kc = loadKubeConfig({ file: fromFlag, inCluster: runsInCluster() });
    assert.equal(kc.getCurrentCluster()?.server, 'https://from-flag.example:6443');
  });
});

test('in a pod without --kubeconfig: the service account and the cluster\'s service address', () => {
  withEnv({ KUBECONFIG: fromEnv, KUBERNETES_SERVICE_HOST: '10.0.0.1', KUBERNETES_SERVICE_PORT: '6443' }, () => {
    assert.equal(runsInCluster(), true);
    const kc = loadKubeConfig({ inCluster: runsInCluster() });
    assert.equal(kc.getCurrentCluster()?.server, 'https://10.0.0.1:6443');
  });
});

test('outside a pod without --kubeconfig: $KUBECONFIG', () => {
  withEnv({ KUBECONFIG: fromEnv, KUBERNETES_SERVICE_HOST: undefined }, () => {
    assert.equal(runsInCluster(), false);
    const kc = loadKubeConfig({ inCluster: runsInCluster() });
    assert.equal(kc.getCurrentCluster()?.server, 'https://from-env.example:6443');
  });
});

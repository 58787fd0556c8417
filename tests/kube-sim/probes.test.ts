// The simulated kubelet probes against each image's contract: a sentinel probed on a path its
// image does not serve is never Ready (Unhealthy events with the kubelet's text); the right
// path is Ready; a failing liveness probe restarts the container after failureThreshold
// misses; a probe on a port nothing listens on is refused.
import { test, after, before } from 'node:test';
import assert from 'node:assert/strict';
import { probeFailure, repositoryOf, servedBy } from '../../src/kube-sim/workloads/probes';
import { startSim, waitFor, type SimFixture } from './helpers';

let f: SimFixture;
before(async () => {
  f = await startSim({ readyDelayMs: 10 });
});
after(() => f.close());

const SENTINEL = 'ghcr.io/unkeyed/sentinel:v1.4.0';

function sentinelPod(name: string, probes: Record<string, unknown>) {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace: 'default' },
    spec: { containers: [{ name: 'sentinel', image: SENTINEL, ports: [{ name: 'http', containerPort: 8040 }], ...probes }] },
  };
}

const http = (path: string, port: number | string = 8040, failureThreshold = 2) => ({ httpGet: { path, port }, periodSeconds: 5, failureThreshold });

async function events(pod: string, reason: string) {
  return (await f.core.listNamespacedEvent({ namespace: 'default', fieldSelector: `involvedObject.name=${pod},reason=${reason}` })).items;
}

test('the contract table and the kubelet texts', () => {
  assert.equal(repositoryOf('ghcr.io/unkeyed/sentinel:v1@sha256:abc'), 'ghcr.io/unkeyed/sentinel');
  assert.equal(repositoryOf('localhost:5000/app'), 'localhost:5000/app');
  assert.deepEqual(servedBy({ name: 'c', image: SENTINEL }), [{ port: 8040, paths: ['/_unkey/internal/health', '/health/live', '/health/ready'] }]);
  const app = { name: 'c', image: 'nginx:1', ports: [{ name: 'web', containerPort: 8080 }] };
  assert.equal(probeFailure(app, { httpGet: { path: '/', port: 'web' } }, '10.244.0.9'), undefined);
  assert.equal(probeFailure(app, { httpGet: { path: '/healthz', port: 8080 } }, '10.244.0.9'), 'HTTP probe failed with statuscode: 404');
  assert.equal(probeFailure(app, { httpGet: { path: '/', port: 9090 } }, '10.244.0.9'), 'Get "http://10.244.0.9:9090/": dial tcp 10.244.0.9:9090: connect: connection refused');
  assert.equal(probeFailure(app, { tcpSocket: { port: 9090 } }, '10.244.0.9'), 'dial tcp 10.244.0.9:9090: connect: connection refused');
  assert.equal(probeFailure(app, { tcpSocket: { port: 8080 } }, '10.244.0.9'), undefined);
  assert.equal(probeFailure(app, { exec: { command: ['true'] } }, '10.244.0.9'), undefined);
});

test('a sentinel probed on a path its image does not serve is never Ready', async () => {
  await f.core.createNamespacedPod({ namespace: 'default', body: sentinelPod('wrong-path', { readinessProbe: http('/_unkey/internal/readyz') }) as any });
  const [unhealthy] = await waitFor('Unhealthy event', async () => {
    const evs = await events('wrong-path', 'Unhealthy');
    return evs.length > 0 && (evs[0]!.count ?? 1) >= 3 ? evs : undefined;
  });
  assert.equal(unhealthy!.type, 'Warning');
  assert.equal(unhealthy!.message, 'Readiness probe failed: HTTP probe failed with statuscode: 404');
  const pod = await f.core.readNamespacedPod({ name: 'wrong-path', namespace: 'default' });
  assert.equal(pod.status?.phase, 'Running');
  assert.equal(pod.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'False');
  assert.equal(pod.status?.containerStatuses?.[0]?.ready, false);
});

test("the sentinel's health path, on 8040 or by the port's name, is Ready", async () => {
  await f.core.createNamespacedPod({ namespace: 'default', body: sentinelPod('right-path', { readinessProbe: http('/_unkey/internal/health', 'http'), livenessProbe: http('/health/live') }) as any });
  await waitFor('Ready', async () => {
    const pod = await f.core.readNamespacedPod({ name: 'right-path', namespace: 'default' });
    return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');
  });
  assert.equal((await events('right-path', 'Unhealthy')).length, 0);
});

test('a failing liveness probe restarts the container after failureThreshold misses', async () => {
  await f.core.createNamespacedPod({ namespace: 'default', body: sentinelPod('wrong-live', { livenessProbe: http('/_unkey/internal/livez', 8040, 2) }) as any });
  const status = await waitFor('restarted twice', async () => {
    const pod = await f.core.readNamespacedPod({ name: 'wrong-live', namespace: 'default' });
    const c = pod.status?.containerStatuses?.[0];
    return c && c.restartCount >= 2 ? c : undefined;
  }, 10_000);
  assert.equal(status.lastState?.terminated?.reason, 'Error');
  const killing = await events('wrong-live', 'Killing');
  assert.equal(killing[0]?.message, 'Container sentinel failed liveness probe, will be restarted');
  const unhealthy = await events('wrong-live', 'Unhealthy');
  assert.equal(unhealthy[0]?.message, 'Liveness probe failed: HTTP probe failed with statuscode: 404');
  // Two misses per restart: never fewer misses than twice the restarts.
  assert.ok((unhealthy[0]?.count ?? 1) >= 2 * status.restartCount);
});

test('a probe on a port nothing listens on is refused', async () => {
  await f.core.createNamespacedPod({
    namespace: 'default',
    body: { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'app-port', namespace: 'default' }, spec: { containers: [{ name: 'app', image: 'nginx:1', ports: [{ containerPort: 80 }], readinessProbe: { httpGet: { path: '/', port: 8080 } } }] } } as any,
  });
  const [ev] = await waitFor('Unhealthy', async () => {
    const evs = await events('app-port', 'Unhealthy');
    return evs.length ? evs : undefined;
  });
  assert.match(ev!.message!, /^Readiness probe failed: Get "http:\/\/10\.244\.\d+\.\d+:8080\/": dial tcp 10\.244\.\d+\.\d+:8080: connect: connection refused$/);
});

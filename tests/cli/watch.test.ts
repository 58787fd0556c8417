// The CLI's following commands against a stand-in for ctrl. `deploy --wait` when the live event
// socket cannot be used: /v1/events refuses the upgrade, or accepts it and never speaks; the
// command still follows the deployment by polling, and says so on stderr exactly once however
// often it retries (tests/cli/commands.test.ts shows the other half: against the real ctrl,
// events drive it). And `rollout status --watch` through a long quiet rollout: one socket, one
// listener, no MaxListenersExceededWarning.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import type { AddressInfo } from 'node:net';
import { WebSocketServer } from 'ws';
import { runCli } from '../helpers/cli';
import { until } from '../helpers/wait';
import { memoryIo } from '../../src/cli';
import type { DeploymentCreated, DeploymentDetail, DeploymentStatus, RolloutView } from '../../src/cli/api.gen';
import { deploymentDetail, topology } from './fixtures';

/** A stand-in for ctrl: POST /v1/deployments creates dep-1; GET answers its current status. */
async function fakeCtrl(upgrade: (req: IncomingMessage, socket: Duplex, head: Buffer) => void) {
  let reads = 0;
  let upgrades = 0;
  let rolloutReads = 0;
  let rolloutDoneAfter = Infinity;
  let status: DeploymentStatus = 'deploying';
  // The answers ctrl gives, typed by the generated client: a fake that drifts fails to compile.
  const detail = (): DeploymentDetail =>
    deploymentDetail({
      status, regions: ['r1'], replicas: 1, cpuMillicores: 100, memoryMib: 64, createdAt: new Date().toISOString(), updatedAt: new Date().toISOString(),
      topology: [topology({ region: 'r1', wanted: 1, running: status === 'ready' ? 1 : 0, pending: status === 'ready' ? 0 : 1 })],
    });
  const created: DeploymentCreated = { id: 'dep-1', status: 'pending', version: 'v1', regions: ['r1'] };
  const server: Server = createServer((req, res) => {
    res.setHeader('content-type', 'application/json');
    if (req.method === 'POST' && req.url === '/v1/deployments') return res.end(JSON.stringify(created));
    if (req.url === '/v1/sentinel-rollouts/current') {
      rolloutReads++;
      const state = rolloutReads > rolloutDoneAfter ? 'completed' : 'in_progress';
      return res.end(JSON.stringify({ state, image: 'sentinel:v2', currentWave: 0, succeededIds: [], failedIds: [], waves: [{ index: 0, total: 1, succeeded: 0, failed: 0, skipped: 0, pending: 1 }] } satisfies RolloutView));
    }
    if (req.url === '/v1/deployments/dep-1') {
      reads++;
      return res.end(JSON.stringify(detail()));
    }
    res.statusCode = 404;
    res.end('{}');
  });
  server.on('upgrade', (req, socket, head) => {
    upgrades++;
    upgrade(req, socket, head);
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  after(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    upgrades: () => upgrades,
    reads: () => reads,
    ready: () => void (status = 'ready'),
    rolloutReads: () => rolloutReads,
    /** The rollout reads as in_progress this many times, then completed. */
    finishRolloutAfter: (n: number) => void (rolloutDoneAfter = n),
  };
}

const deployWait = (url: string, watch: Record<string, number>) =>
  runCli(['deploy', '--image', 'nginx:1.27', '--regions', 'r1', '--wait'], { env: { UNKEY_INFRA_API: url, UNKEY_INFRA_TOKEN: 'test-token-0123456789' }, watch });

test('a refused event socket: deploy --wait finishes by polling and says so once, though it retried', async () => {
  const ctrl = await fakeCtrl((_req, socket) => socket.end('HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n'));
  const running = deployWait(ctrl.url, { pollMs: 50 });
  // One attempt per poll interval at most: a few polls mean a few refused attempts.
  await until(() => ctrl.upgrades() >= 3, 10_000, 'several socket attempts');
  ctrl.ready();
  const r = await running;
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /deployment dep-1 is ready/);
  assert.equal(r.stderr, 'unkey-infra: live events unavailable (Unexpected server response: 404); following by polling every 50ms\n');
});

test('an event socket that opens but never greets counts as lost after helloTimeoutMs', async () => {
  const wss = new WebSocketServer({ noServer: true });
  after(() => new Promise<void>((r) => wss.close(() => r())));
  // Accepts the upgrade and then says nothing at all, like a ctrl whose event route is broken.
  const ctrl = await fakeCtrl((req, socket, head) => wss.handleUpgrade(req, socket, head, () => {}));
  const io = memoryIo();
  const running = runCli(['deploy', '--image', 'nginx:1.27', '--regions', 'r1', '--wait'], {
    io,
    env: { UNKEY_INFRA_API: ctrl.url, UNKEY_INFRA_TOKEN: 'test-token-0123456789' },
    watch: { pollMs: 100, helloTimeoutMs: 300 },
  });
  await until(() => io.stderr().includes('live events unavailable'), 10_000, 'the fallback notice');
  ctrl.ready();
  const r = await running;
  assert.equal(r.code, 0, r.stderr);
  assert.equal(r.stderr, 'unkey-infra: live events unavailable (no greeting within 300 ms); following by polling every 100ms\n');
});

test('rollout status --watch through many quiet polls holds one socket listener: no MaxListenersExceededWarning', async () => {
  const warnings: string[] = [];
  const onWarning = (w: Error) => warnings.push(`${w.name}: ${w.message}`);
  process.on('warning', onWarning);
  after(() => void process.off('warning', onWarning));
  const wss = new WebSocketServer({ noServer: true });
  after(() => new Promise<void>((r) => wss.close(() => r())));
  // A healthy socket that greets and then stays quiet, as during a long wave: every wait
  // ends by the periodic read, the case where a listener per wait used to pile up.
  const ctrl = await fakeCtrl((req, socket, head) => wss.handleUpgrade(req, socket, head, (ws) => ws.send(JSON.stringify({ type: 'hello' }))));
  // EventEmitter warns past 10 listeners of one event: 15 quiet waits are well beyond that.
  ctrl.finishRolloutAfter(15);
  const r = await runCli(['rollout', 'status', '--watch'], { env: { UNKEY_INFRA_API: ctrl.url, UNKEY_INFRA_TOKEN: 'test-token-0123456789' }, watch: { pollMs: 20 } });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /rollout to sentinel:v2: completed/);
  assert.equal(ctrl.rolloutReads(), 16, 'the watch read until the rollout completed');
  assert.equal(ctrl.upgrades(), 1, 'one socket for the whole watch');
  // process.emitWarning reports on the next tick: let it.
  await new Promise((res) => setImmediate(res));
  assert.deepEqual(warnings.filter((w) => w.startsWith('MaxListenersExceededWarning')), []);
  assert.equal(r.stderr, '', 'the socket stayed up: no fallback notice');
});

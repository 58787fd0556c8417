// Shared setup for krane-against-simulator tests: an in-process kube-sim with krane's
// namespaces, a client, and a tiny fake ctrl that records status reports.
import { until as poll } from '../helpers/wait';
import { after } from 'node:test';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeSim, DEFAULT_SIM_OPTIONS } from '../../src/kube/sim';
import { KubeApi } from '../../src/kube/api';
import { KubeController } from '../../src/kube/controller';
import { createLogger } from '../../src/log';

export const logger = createLogger('silent');

export async function startSim(readyDelayMs = 50): Promise<{ sim: KubeSim; api: KubeApi }> {
  const sim = new KubeSim({ readyDelayMs, minReadyScale: 0.01, namespaces: [...DEFAULT_SIM_OPTIONS.namespaces, 'unkey', 'sentinel'] });
  await sim.listen(0);
  after(() => sim.close());
  return { sim, api: new KubeApi(sim.kubeConfig()) };
}

export function controller(api: KubeApi, verifyAfterMs = 60_000): KubeController {
  return new KubeController({ api, region: 'us-east-1', logger, verifyAfterMs });
}

export interface FakeCtrl {
  url: string;
  reports: { at: number; path: string; body: any }[];
}

export async function fakeCtrl(): Promise<FakeCtrl> {
  const reports: FakeCtrl['reports'] = [];
  const server = createServer((req, res) => {
    let data = '';
    req.on('data', (c) => (data += c));
    req.on('end', () => {
      reports.push({ at: Date.now(), path: req.url!, body: JSON.parse(data) });
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  after(() => new Promise<void>((r) => server.close(() => r())));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, reports };
}

export const until = <T>(fn: () => T | undefined | false | Promise<T | undefined | false>, ms = 10_000, step = 10) => poll(fn, ms, 'condition', step);

// Shared setup for krane-against-simulator tests: an in-process kube-sim with krane's
// namespaces, a client, and a tiny fake ctrl that records status reports.
import { after } from 'node:test';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { KubeSim, DEFAULT_SIM_OPTIONS } from '../../src/kube-sim';
import { KubeClient } from '../../src/kube/client';
import { ApplyController, type ApplyControllerOptions } from '../../src/kube/apply-controller';
import { createLogger } from '../../src/log';

export const logger = createLogger('silent');

export async function startSim(readyDelayMs = 50): Promise<{ sim: KubeSim; api: KubeClient }> {
  const sim = new KubeSim({ readyDelayMs, minReadyScale: 0.01, namespaces: [...DEFAULT_SIM_OPTIONS.namespaces, 'unkey', 'sentinel'] });
  await sim.listen(0);
  after(() => sim.close());
  return { sim, api: new KubeClient(sim.kubeConfig()) };
}

export function controller(api: KubeClient, verifyAfterMs = 60_000, extra: Partial<ApplyControllerOptions> = {}): ApplyController {
  return new ApplyController({ api, region: 'us-east-1', logger, verifyAfterMs, ...extra });
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

/** The one poller (tests/helpers/wait.ts), re-exported under the name these tests import. */
export { until } from '../helpers/wait';

/** What a fault rule answers instead of the simulator; undefined lets the request through. */
export interface FaultAnswer {
  status: number;
  /** A Kubernetes Status body (JSON), or raw text. */
  body: Record<string, unknown> | string;
  headers?: Record<string, string>;
}

/**
 * An HTTP proxy in front of the simulator that answers chosen requests itself, the way a real
 * API server would (quota 403, 413, etcd's "request is too large" 500, 409, 429 with
 * Retry-After), or never ('hang'): krane's handling of answers the simulator does not give.
 */
export async function faultProxy(target: string, rule: (req: { method: string; path: string; body: string }) => FaultAnswer | 'hang' | undefined) {
  const seen: { method: string; path: string; answered: number | 'sim' | 'hang' }[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', async () => {
      const body = Buffer.concat(chunks).toString();
      const answer = rule({ method: req.method!, path: req.url!, body });
      // 'hang': the request is read and never answered, as over a link that went silent.
      if (answer === 'hang') return void seen.push({ method: req.method!, path: req.url!, answered: 'hang' });
      if (answer) {
        seen.push({ method: req.method!, path: req.url!, answered: answer.status });
        const text = typeof answer.body === 'string' ? answer.body : JSON.stringify(answer.body);
        res.writeHead(answer.status, { 'content-type': 'application/json', ...answer.headers }).end(text);
        return;
      }
      seen.push({ method: req.method!, path: req.url!, answered: 'sim' });
      const headers = { ...req.headers } as Record<string, string>;
      delete headers.host;
      try {
        const up = await fetch(new URL(req.url!, target), { method: req.method, headers, body: chunks.length ? body : undefined });
        const h: Record<string, string> = {};
        up.headers.forEach((v, k) => {
          if (k !== 'content-length' && k !== 'transfer-encoding' && k !== 'connection') h[k] = v;
        });
        res.writeHead(up.status, h);
        if (!up.body) return res.end();
        for await (const c of up.body as unknown as AsyncIterable<Uint8Array>) res.write(c);
        res.end();
      } catch {
        res.destroy();
      }
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  after(() => {
    server.closeAllConnections();
    return new Promise<void>((r) => server.close(() => r()));
  });
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen };
}

/** A Kubernetes Status body as the API server sends it with an error. */
export function statusBody(code: number, reason: string, message: string, details?: Record<string, unknown>) {
  return { kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Failure', message, reason, ...(details ? { details } : {}), code };
}

// Shared setup for the simulator tests: a simulator on a random port, clients from the
// unchanged @kubernetes/client-node, and small polling/watch helpers.
import { AppsV1Api, CoreV1Api, KubernetesObjectApi, Watch, type KubeConfig } from '@kubernetes/client-node';
import { KubeSim, SIM_TOKEN, type KubeSimOptions } from '../../src/kube-sim';

export interface SimFixture {
  sim: KubeSim;
  url: string;
  kc: KubeConfig;
  objects: KubernetesObjectApi;
  core: CoreV1Api;
  apps: AppsV1Api;
  /** fetch with the admin's bearer token, as kubectl with the admin kubeconfig sends it. */
  fetch(url: string, init?: RequestInit): Promise<Response>;
  close(): Promise<void>;
}

export async function startSim(opts: Partial<KubeSimOptions> = {}): Promise<SimFixture> {
  const sim = new KubeSim({ readyDelayMs: 5, bookmarkIntervalMs: 50, minReadyScale: 0.001, ...opts });
  const url = await sim.listen(0);
  const kc = sim.kubeConfig();
  return {
    sim,
    url,
    kc,
    objects: KubernetesObjectApi.makeApiClient(kc),
    core: kc.makeApiClient(CoreV1Api),
    apps: kc.makeApiClient(AppsV1Api),
    fetch: (u, init = {}) => fetch(u, { ...init, headers: { authorization: `Bearer ${SIM_TOKEN}`, ...(init.headers as Record<string, string> | undefined) } }),
    close: () => sim.close(),
  };
}

/** The one poller (tests/helpers/wait.ts), re-exported under the name these tests import. */
export { waitFor } from '../helpers/wait';

export interface WatchEvent {
  type: string;
  object: any;
}

export interface WatchHandle {
  events: WatchEvent[];
  ended: Promise<unknown>;
  stop(): void;
}

/** Starts a client-node Watch and records its events. */
export async function recordWatch(kc: KubeConfig, path: string, params: Record<string, string | number | boolean | undefined>): Promise<WatchHandle> {
  const events: WatchEvent[] = [];
  let resolveEnded!: (v: unknown) => void;
  const ended = new Promise((r) => (resolveEnded = r));
  const ctl = await new Watch(kc).watch(path, params, (type, object) => events.push({ type, object }), (err) => resolveEnded(err ?? null));
  return { events, ended, stop: () => ctl.abort() };
}

/** Pacing only (tests/helpers/wait.ts `pause`), never ordering. */
export { pause as sleep } from '../helpers/wait';

export function statefulSet(name: string, image: string, replicas = 2, extra: Record<string, unknown> = {}) {
  return {
    apiVersion: 'apps/v1',
    kind: 'StatefulSet',
    metadata: { name, namespace: 'default', labels: { app: name, 'app.kubernetes.io/managed-by': 'krane' } },
    spec: {
      replicas,
      serviceName: name,
      selector: { matchLabels: { app: name } },
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'app', image }] } },
      ...extra,
    },
  };
}

export function deployment(name: string, image: string, replicas = 3, strategy?: Record<string, unknown>) {
  return {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name, namespace: 'default', labels: { app: name } },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      ...(strategy ? { strategy } : {}),
      template: { metadata: { labels: { app: name } }, spec: { containers: [{ name: 'app', image }] } },
    },
  };
}

export function service(name: string, labels: Record<string, string> = {}) {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name, namespace: 'default', labels: { app: name, ...labels } },
    spec: { selector: { app: name }, ports: [{ name: 'http', port: 80, targetPort: 8080 }] },
  };
}

/** The code and decoded Status of a request the client rejected. */
export async function errorOf(p: Promise<unknown>): Promise<{ code: number; body: any }> {
  try {
    await p;
  } catch (e: any) {
    return { code: e.code, body: typeof e.body === 'string' && e.body.startsWith('{') ? JSON.parse(e.body) : e.body };
  }
  throw new Error('expected the request to fail');
}

// KubeSim ties the parts together: store, API verbs, built-in controllers, request stats and
// the HTTP server, plus the admin operations exposed under `/_sim`.
import { boundUrl } from '../../net';
import type { KubeConfig } from '@kubernetes/client-node';
import { createLogger, type Logger } from '../../log';
import { KubeApi } from './api';
import { WorkloadController } from './controller';
import { simKubeConfig } from './kubeconfig';
import { FAULTS, type Fault } from './pod-status';
import { mustResourceForKind, RESOURCES } from './resources';
import { createSimServer, type SimServer } from './server';
import { SimStats } from './stats';
import { ObjectStore } from './store';

export interface KubeSimOptions {
  /** Milliseconds from pod creation to Ready. */
  readyDelayMs: number;
  /** Events kept per resource type for watch resume; older resourceVersions get 410. */
  eventWindow: number;
  /** How often watches that allow bookmarks get one. */
  bookmarkIntervalMs: number;
  /** Multiplies minReadySeconds of workloads (1 = real seconds). */
  minReadyScale: number;
  /** Multiplies progressDeadlineSeconds of Deployments (1 = real seconds). */
  progressDeadlineScale: number;
  /** Namespaces that exist from the start. */
  namespaces: string[];
  logger: Logger;
}

export const DEFAULT_SIM_OPTIONS = {
  readyDelayMs: 1000,
  // Ten thousand events per type covers minutes of a thousand-workload sync, while a watcher
  // that was away longer relists, as it would after etcd compaction.
  eventWindow: 10_000,
  // The API server sends bookmarks about once a minute; a few seconds keeps resume points
  // fresh without flooding idle watches.
  bookmarkIntervalMs: 5_000,
  minReadyScale: 1,
  progressDeadlineScale: 1,
  namespaces: ['default', 'kube-system', 'kube-public', 'kube-node-lease'],
} satisfies Omit<KubeSimOptions, 'logger'>;

const NAMESPACE = mustResourceForKind('v1', 'Namespace');

export class KubeSim {
  readonly store: ObjectStore;
  readonly api: KubeApi;
  readonly stats = new SimStats();
  readonly controller: WorkloadController;
  readonly logger: Logger;
  readonly bookmarkIntervalMs: number;
  readonly options: Omit<KubeSimOptions, 'logger'>;
  private http: SimServer | undefined;
  private baseUrl: string | undefined;

  constructor(opts: Partial<KubeSimOptions> = {}) {
    const { logger, ...rest } = opts;
    this.options = { ...DEFAULT_SIM_OPTIONS, ...rest };
    this.logger = logger ?? createLogger('silent');
    this.bookmarkIntervalMs = this.options.bookmarkIntervalMs;
    this.store = new ObjectStore({ eventWindow: this.options.eventWindow });
    this.api = new KubeApi(this.store);
    this.controller = new WorkloadController(this.api, this.store, { readyDelayMs: this.options.readyDelayMs, minReadyScale: this.options.minReadyScale, progressDeadlineScale: this.options.progressDeadlineScale }, this.logger);
    for (const ns of this.options.namespaces) {
      this.api.create(NAMESPACE, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }, { fieldManager: 'kube-sim' });
    }
  }

  /** The base URL once listening (e.g. `http://127.0.0.1:6443`). */
  get url(): string {
    if (!this.baseUrl) throw new Error('kube-sim is not listening');
    return this.baseUrl;
  }

  async listen(port: number, host = '127.0.0.1'): Promise<string> {
    const http = createSimServer(this);
    this.http = http;
    await new Promise<void>((resolve, reject) => {
      http.server.once('error', reject);
      http.server.listen(port, host, () => {
        http.server.off('error', reject);
        resolve();
      });
    });
    this.baseUrl = boundUrl(http.server, host);
    return this.baseUrl;
  }

  /** A KubeConfig for clients in this process. */
  kubeConfig(namespace = 'default'): KubeConfig {
    return simKubeConfig(this.url, namespace);
  }

  setFault(namespace: string, name: string, fault: Fault | undefined): { pods: string[] } {
    return this.controller.setFault(namespace, name, fault);
  }

  /**
   * Drops the watch event history: watches from a resourceVersion older than the newest event
   * of their type get 410. With `dropWatches`, every resourceVersion issued so far expires and
   * open watches are closed, so every client reconnects, gets 410 and relists.
   */
  compact(opts: { dropWatches?: boolean } = {}): void {
    this.store.compact(opts.dropWatches === true);
    if (opts.dropWatches) this.http?.closeWatches();
  }

  admin(method: string, path: string, body: unknown): { status: number; body: unknown } | undefined {
    const b = (body ?? {}) as Record<string, unknown>;
    if (path === '/stats' && method === 'GET') return { status: 200, body: this.stats.snapshot() };
    if (path === '/stats/reset' && method === 'POST') return { status: 200, body: { previous: this.stats.reset() } };
    if (path === '/faults' && method === 'GET') return { status: 200, body: { faults: this.controller.listFaults() } };
    if (path === '/faults' && method === 'POST') {
      const fault = b.fault === null || b.fault === 'none' ? undefined : (b.fault as Fault);
      if (typeof b.namespace !== 'string' || typeof b.name !== 'string' || (fault !== undefined && !FAULTS.includes(fault))) {
        return { status: 400, body: { error: `body must be { namespace, name, fault: ${[...FAULTS, 'none'].join(' | ')} }` } };
      }
      const r = this.setFault(b.namespace, b.name, fault);
      return { status: 200, body: { namespace: b.namespace, name: b.name, fault: fault ?? 'none', pods: r.pods } };
    }
    if (path === '/compact' && method === 'POST') {
      this.compact({ dropWatches: b.dropWatches === true });
      return { status: 200, body: { resourceVersion: String(this.store.resourceVersion) } };
    }
    if (path === '/info' && method === 'GET') {
      const counts: Record<string, number> = {};
      for (const r of RESOURCES) counts[r.plural] = this.store.count(r);
      return { status: 200, body: { url: this.baseUrl, resourceVersion: String(this.store.resourceVersion), readyDelayMs: this.options.readyDelayMs, objects: counts } };
    }
    return undefined;
  }

  async close(): Promise<void> {
    this.controller.stop();
    const http = this.http;
    if (!http) return;
    this.http = undefined;
    http.closeWatches();
    await new Promise<void>((resolve) => {
      http.server.close(() => resolve());
      http.server.closeAllConnections();
    });
  }
}

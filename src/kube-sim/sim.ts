// KubeSim ties the parts together: store, API verbs, built-in controllers, events, quotas,
// traffic controls, the deletion audit, request stats and the HTTP server.
import type { KubeConfig } from '@kubernetes/client-node';
import { createLogger, type Logger } from '../log';
import { boundUrl } from '../net';
import { adminRoute } from './admin';
import { WriteDenials } from './denials';
import { DeletionAudit } from './audit';
import { Authenticator, type UserInfo } from './auth';
import { TrafficControl, type RateLimit } from './chaos';
import { CILIUM_POLICY_CRD, CrdController } from './crds';
import { SIM_CONTEXT, SIM_TOKEN, simKubeConfig, type KubeconfigUser } from './kubeconfig';
import { ObjectStore } from './object-store';
import { serveOpenApi } from './openapi';
import { QuotaController } from './quota';
import { authorize, bootstrapPolicy, type Attributes, type Decision } from './rbac';
import { mustResourceForKind, resourceForKind, resourceForQuotaKey, RESOURCES, type ResourceDef } from './resources';
import { createSimServer, type SimHost, type SimServer } from './server';
import { SimApi } from './sim-api';
import { SimStats } from './stats';
import type { KubeObject } from './types';
import { WorkloadController } from './workloads/controller';
import { HpaController } from './workloads/hpa';
import { EventRecorder } from './workloads/events';
import type { Fault } from './workloads/pod-status';
import type { NodeShape } from './workloads/scheduler';

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
  /** core/v1 Events kept; past it the oldest go. */
  eventLimit: number;
  /** Deletion audit entries kept; past it the oldest go. */
  auditLimit: number;
  /** Milliseconds between the health-check lines of a running container's log. */
  logIntervalMs: number;
  /** A request rate limit from the start (off when absent; the admin API can set one). */
  rateLimit?: RateLimit;
  /** How often HorizontalPodAutoscalers are evaluated (workloads/hpa.ts). */
  hpaSyncMs: number;
  /** Multiplies autoscalers' stabilisation windows (1 = real seconds). */
  hpaStabilizationScale: number;
  /** Install Cilium's CiliumNetworkPolicy CRD at start (false: a cluster without Cilium). */
  cilium: boolean;
  /**
   * The nodes and each one's allocatable CPU (millicores) and memory (bytes): pods take room
   * from the node they are bound to, and one no node has room for stays Pending, Unschedulable
   * (workloads/capacity.ts). Absent: nodes without limit (three of 8 cores and 32 GiB, a pod
   * larger than one never fits), as a cluster autoscaler would make it look.
   */
  nodes?: NodeShape;
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
  // A pod's start writes five events; ten thousand keeps the recent history of a
  // two-thousand-pod cluster (a real one keeps an hour of them).
  eventLimit: 10_000,
  // Enough for a chaos run's deletions between two reads of the log.
  auditLimit: 10_000,
  // Like a service logging its health check every few seconds.
  logIntervalMs: 5_000,
  // The kube-controller-manager's --horizontal-pod-autoscaler-sync-period.
  hpaSyncMs: 15_000,
  hpaStabilizationScale: 1,
  cilium: true,
} satisfies Omit<KubeSimOptions, 'logger'>;

const NAMESPACE = mustResourceForKind('v1', 'Namespace');
const QUOTA = mustResourceForKind('v1', 'ResourceQuota');

export class KubeSim implements SimHost {
  readonly store: ObjectStore;
  readonly api: SimApi;
  readonly stats = new SimStats();
  readonly controller: WorkloadController;
  readonly autoscalers: HpaController;
  readonly events: EventRecorder;
  readonly audit: DeletionAudit;
  readonly traffic: TrafficControl;
  /** Writes refused as an admission webhook refuses them (denials.ts). */
  readonly denials = new WriteDenials();
  readonly logger: Logger;
  readonly bookmarkIntervalMs: number;
  readonly logIntervalMs: number;
  readonly options: Omit<KubeSimOptions, 'logger'>;
  private readonly quotas: QuotaController;
  private readonly authn: Authenticator;
  private readonly crds: CrdController;
  private http: SimServer | undefined;
  private baseUrl: string | undefined;

  constructor(opts: Partial<KubeSimOptions> = {}) {
    const { logger, ...rest } = opts;
    this.options = { ...DEFAULT_SIM_OPTIONS, ...rest };
    this.logger = logger ?? createLogger('silent');
    this.bookmarkIntervalMs = this.options.bookmarkIntervalMs;
    this.logIntervalMs = this.options.logIntervalMs;
    this.store = new ObjectStore({ eventWindow: this.options.eventWindow });
    this.audit = new DeletionAudit(this.options.auditLimit);
    this.traffic = new TrafficControl(this.options.rateLimit);
    this.api = new SimApi(this.store, this.audit);
    this.events = new EventRecorder(this.store, this.options.eventLimit);
    const { readyDelayMs, minReadyScale, progressDeadlineScale, nodes } = this.options;
    this.controller = new WorkloadController(this.api, this.store, this.events, { readyDelayMs, minReadyScale, progressDeadlineScale, nodes }, this.logger);
    this.autoscalers = new HpaController(this.api, this.store, this.events, { syncMs: this.options.hpaSyncMs, stabilizationScale: this.options.hpaStabilizationScale }, this.logger);
    this.quotas = new QuotaController(this.store, resourceForQuotaKey, (ns, name, status) => this.api.setStatus(QUOTA, ns, name, status));
    this.authn = new Authenticator(this.store, SIM_TOKEN);
    this.crds = new CrdController(this.store, this.api);
    for (const ns of this.options.namespaces) {
      this.api.create(NAMESPACE, '', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } }, { fieldManager: 'kube-sim' });
    }
    this.applyManifests(bootstrapPolicy(), 'kube-apiserver');
    if (this.options.cilium) this.applyManifests([CILIUM_POLICY_CRD]);
  }

  /**
   * Server-side applies objects as the admin would (`kubectl apply --server-side`), in order:
   * e.g. deploy/krane-rbac.yaml's namespaces, ServiceAccount, Roles and RoleBindings. Throws
   * the API's error for an object it refuses, or for a kind it does not serve.
   */
  applyManifests(objects: readonly KubeObject[], fieldManager = 'kube-sim'): KubeObject[] {
    return objects.map((o) => {
      const def = resourceForKind(o.apiVersion, o.kind);
      if (!def || !this.served(def)) throw new Error(`kube-sim: no resource for ${o.apiVersion} ${o.kind}`);
      const ns = def.namespaced ? (o.metadata?.namespace ?? 'default') : '';
      return this.api.apply(def, ns, o.metadata?.name ?? '', o, { fieldManager, force: true }).object;
    });
  }

  /** Whether a resource type is served now (custom resources only while their CRD exists). */
  served = (def: ResourceDef): boolean => this.crds.served(def);

  authenticate(authorization: string | undefined): UserInfo {
    return this.authn.authenticate(authorization);
  }

  authorize(user: UserInfo, attrs: Attributes): Decision {
    return authorize(this.store, user, attrs);
  }

  /**
   * A bearer token for an existing ServiceAccount (`system:serviceaccount:<ns>:<name>`, in the
   * groups system:serviceaccounts, system:serviceaccounts:<ns> and system:authenticated); it
   * stops working when the ServiceAccount is deleted.
   */
  serviceAccountToken(namespace: string, name: string): string {
    return this.authn.mintServiceAccountToken(namespace, name);
  }

  /** The kubeconfig user entry for a ServiceAccount: a fresh token under its identity's name. */
  serviceAccountUser(namespace: string, name: string): KubeconfigUser {
    return { user: `${namespace}-${name}`, token: this.serviceAccountToken(namespace, name) };
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
      http.listener.once('error', reject);
      http.listener.listen(port, host, () => {
        http.listener.off('error', reject);
        resolve();
      });
    });
    this.baseUrl = boundUrl(http.listener, host);
    return this.baseUrl;
  }

  /** A KubeConfig for clients in this process: the admin's, or `who`'s (serviceAccountUser). */
  kubeConfig(namespace = 'default', who?: KubeconfigUser): KubeConfig {
    return simKubeConfig(this.url, namespace, who ?? { user: SIM_CONTEXT, token: SIM_TOKEN });
  }

  setFault(namespace: string, name: string, fault: Fault | undefined): { pods: string[] } {
    return this.controller.setFault(namespace, name, fault);
  }

  listFaults(): { namespace: string; name: string; fault: Fault }[] {
    return this.controller.listFaults();
  }

  faultFor(pod: KubeObject, image: string | undefined): Fault | undefined {
    return this.controller.faultFor(pod, image);
  }

  /** Pods whose containers use `image` stay ContainerCreating (not Ready) until released:
   *  for tests that make one workload ready after another (workloads/gates.ts). */
  holdImage(image: string): void {
    this.controller.hold({ image });
  }

  /** Lifts the gate on `image`: the pods it held go on to start (and become Ready). */
  releaseImage(image: string): { released: boolean; pods: string[] } {
    return this.controller.release({ image });
  }

  /** The same for the pods of one workload (a Deployment or StatefulSet by namespace/name). */
  holdWorkload(namespace: string, name: string): void {
    this.controller.hold({ namespace, name });
  }

  releaseWorkload(namespace: string, name: string): { released: boolean; pods: string[] } {
    return this.controller.release({ namespace, name });
  }

  gatesHeld(): { images: string[]; workloads: string[] } {
    return this.controller.gatesHeld();
  }

  /** API writes of namespace/name (any kind) are refused with `reason`, as a validating
   *  admission webhook would refuse them, until allowWrites (denials.ts). */
  denyWrites(namespace: string, name: string, reason: string): void {
    this.denials.deny(namespace, name, reason);
  }

  allowWrites(namespace: string, name: string): boolean {
    return this.denials.allow(namespace, name);
  }

  checkWrite(namespace: string, name: string | undefined): void {
    this.denials.check(namespace, name);
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

  info(): Record<string, unknown> {
    const counts: Record<string, number> = {};
    for (const r of RESOURCES) counts[r.plural] = this.store.count(r);
    return { url: this.baseUrl, resourceVersion: String(this.store.resourceVersion), readyDelayMs: this.options.readyDelayMs, objects: counts, nodes: { limited: this.options.nodes !== undefined, requested: this.controller.nodeUsage() } };
  }

  admin(method: string, path: string, body: unknown, query: URLSearchParams = new URLSearchParams()): { status: number; body: unknown } | undefined {
    return adminRoute(this, method, path, body, query);
  }

  openapi(path: string, accept: string | undefined): { status: number; body: unknown } | undefined {
    return serveOpenApi(path, accept, this.served);
  }

  async close(): Promise<void> {
    this.controller.stop();
    this.autoscalers.stop();
    this.quotas.stop();
    const http = this.http;
    if (!http) return;
    this.http = undefined;
    http.closeWatches();
    await new Promise<void>((resolve) => {
      http.listener.close(() => resolve());
      http.closeAllConnections();
    });
  }
}

// KubeClient, a thin wrapper over @kubernetes/client-node 1.4: server-side apply, get, delete,
// paged list and watch for the handful of kinds krane manages, with request counting for
// metrics and the benchmark; and the one place that reads client errors (status code, Status
// body, Retry-After) into the facts src/kube/classify.ts decides on.
import { AppsV1Api, createConfiguration, KubeConfig, KubernetesObjectApi, PatchStrategy, ServerConfiguration, Watch, type Configuration, type KubernetesObject } from '@kubernetes/client-node';
import { AppError } from '../errors';
import type { ApiFailure } from './classify';

/** The field manager every apply uses; ownership in managedFields is recorded under it. */
export const FIELD_MANAGER = 'krane';
/**
 * Page size of list calls. The API server's own default cap is 500 for paginating clients;
 * larger pages make single responses big and slow to parse without saving many round trips.
 */
const LIST_PAGE = 500;

/**
 * How long a request (not a watch) may take before krane gives up on it. The client library
 * sets no limit, and a request on a connection that went silent (a black-holed API server, a
 * dropped NAT entry) then never settles: krane's feed waits for its applies before it reads
 * on, and its shutdown waits for them too, so one such request held the region for good. The
 * API server ends its own requests at 60 s (--request-timeout), so past that no answer comes.
 */
export const REQUEST_TIMEOUT_MS = 70_000;

/** Reads and writes of /scale before a conflict is left to the caller's retry: status writes
 *  of a starting workload come a few per second, so one of three tries lands between them. */
const SCALE_ATTEMPTS = 3;

export interface ObjectRef {
  apiVersion: string;
  kind: string;
  namespace: string;
  name: string;
}

/** Kinds krane reads or writes, with their plural for watch paths. */
export const KINDS = {
  Service: { apiVersion: 'v1', plural: 'services' },
  Pod: { apiVersion: 'v1', plural: 'pods' },
  StatefulSet: { apiVersion: 'apps/v1', plural: 'statefulsets' },
  Deployment: { apiVersion: 'apps/v1', plural: 'deployments' },
  PodDisruptionBudget: { apiVersion: 'policy/v1', plural: 'poddisruptionbudgets' },
  CiliumNetworkPolicy: { apiVersion: 'cilium.io/v2', plural: 'ciliumnetworkpolicies' },
  ConfigMap: { apiVersion: 'v1', plural: 'configmaps' },
  HorizontalPodAutoscaler: { apiVersion: 'autoscaling/v2', plural: 'horizontalpodautoscalers' },
} as const;
export type KindName = keyof typeof KINDS;

export type Verb = 'apply' | 'get' | 'delete' | 'list' | 'watch' | 'scale';

/** HTTP status of a failed client call, or undefined for network-level failures. */
export function httpStatus(err: unknown): number | undefined {
  const e = err as { code?: unknown; statusCode?: unknown };
  if (typeof e?.code === 'number') return e.code;
  if (typeof e?.statusCode === 'number') return e.statusCode;
  return undefined;
}

/**
 * True when the API server does not serve the kind at all (its group/version is unknown, or the
 * kind is missing from it): e.g. CiliumNetworkPolicy on a cluster without Cilium's CRDs.
 * Retrying cannot help until an operator installs it.
 */
export function isKindUnavailable(err: unknown): boolean {
  const msg = (err as Error)?.message ?? '';
  return msg.startsWith('Unrecognized API version and kind') || (httpStatus(err) === 404 && msg.startsWith('Failed to fetch resource metadata'));
}

/** The Status body of a failed call, parsed when it arrived as text. */
function statusBody(err: unknown): Record<string, unknown> | string | undefined {
  const body = (err as { body?: unknown } | null)?.body;
  if (typeof body === 'string') {
    try {
      const parsed = JSON.parse(body) as unknown;
      return parsed && typeof parsed === 'object' ? (parsed as Record<string, unknown>) : body;
    } catch {
      return body;
    }
  }
  return body && typeof body === 'object' ? (body as Record<string, unknown>) : undefined;
}

/** The facts src/kube/classify.ts decides on, read from a client error (data in, data out). */
export function apiFailure(err: unknown): ApiFailure {
  const body = statusBody(err);
  const status = typeof body === 'object' ? body : {};
  const details = (status.details ?? {}) as { kind?: unknown; causes?: unknown; retryAfterSeconds?: unknown };
  const causes = (Array.isArray(details.causes) ? (details.causes as Record<string, unknown>[]) : [])
    .filter((c) => typeof c?.reason === 'string')
    .map((c) => ({
      reason: c.reason as string,
      ...(typeof c.field === 'string' ? { field: c.field } : {}),
      ...(typeof c.message === 'string' ? { message: c.message } : {}),
    }));
  const headers = ((err as { headers?: unknown } | null)?.headers ?? {}) as Record<string, unknown>;
  const header = headers['retry-after'] ?? headers['Retry-After'];
  const fromHeader = typeof header === 'string' && /^\d+$/.test(header.trim()) ? Number(header) : undefined;
  const fromBody = typeof details.retryAfterSeconds === 'number' ? details.retryAfterSeconds : undefined;
  const retryAfterSeconds = fromHeader ?? fromBody;
  let message: string;
  if (typeof status.message === 'string' && status.message) message = status.message;
  else if (typeof body === 'string') message = body.slice(0, 2048);
  // A request given up by the timeout: node-fetch's own words ("The user aborted a request")
  // would blame a user.
  else if ((err as Error)?.name === 'AbortError') message = 'no answer from the API server within the request timeout';
  else message = (err as Error)?.message ?? String(err);
  return {
    status: httpStatus(err),
    ...(typeof status.reason === 'string' ? { reason: status.reason } : {}),
    message,
    ...(typeof details.kind === 'string' ? { detailsKind: details.kind } : {}),
    causes,
    ...(retryAfterSeconds !== undefined ? { retryAfterSeconds } : {}),
  };
}

/** The API server's message from a failed call's Status body, for logs and failure reports. */
export function apiMessage(err: unknown): string {
  return apiFailure(err).message;
}

export function collectionPath(apiVersion: string, plural: string, namespace: string): string {
  const root = apiVersion.includes('/') ? `/apis/${apiVersion}` : `/api/${apiVersion}`;
  return `${root}/namespaces/${namespace}/${plural}`;
}

/**
 * Loads the client configuration: an explicit file, else in-cluster (service account) when
 * running in a pod, else the default chain ($KUBECONFIG, then ~/.kube/config, read by the
 * client library). Whether krane runs in a pod comes from config.ts (the one reader of the
 * environment).
 */
export function loadKubeConfig(source: { file?: string; inCluster: boolean }): KubeConfig {
  const kc = new KubeConfig();
  if (source.file) kc.loadFromFile(source.file);
  else if (source.inCluster) kc.loadFromCluster();
  else kc.loadFromDefault();
  return kc;
}

export class KubeClient {
  readonly objects: KubernetesObjectApi;
  private readonly apps: AppsV1Api;
  private readonly watcher: Watch;
  /** Requests sent, by verb. Read by metrics and the benchmark. */
  readonly counts: Record<Verb, number> = { apply: 0, get: 0, delete: 0, list: 0, watch: 0, scale: 0 };

  constructor(
    readonly config: KubeConfig,
    opts: { requestTimeoutMs?: number } = {},
  ) {
    const timed = timedConfiguration(config, opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS);
    this.objects = new ObjectApi(config, timed);
    this.apps = new AppsV1Api(timed);
    this.watcher = new Watch(config);
  }

  /**
   * Raises a StatefulSet's or Deployment's replicas to `floor` through its /scale subresource,
   * the door autoscalers and `kubectl scale` use (field manager `krane`, so managedFields shows
   * who did it). The write carries the resourceVersion read, so it cannot undo a scale made in
   * between (409, retried by the caller). Returns false when they were not below the floor or
   * the workload is gone.
   */
  async raiseReplicas(ref: ObjectRef, floor: number): Promise<boolean> {
    const args = { name: ref.name, namespace: ref.namespace };
    const sts = ref.kind === 'StatefulSet';
    if (!sts && ref.kind !== 'Deployment') throw new AppError('ERR_KUBE_SCALE_UNSUPPORTED', `cannot scale a ${ref.kind}`);
    for (let attempt = 1; ; attempt++) {
      this.counts.scale++;
      let scale;
      try {
        scale = sts ? await this.apps.readNamespacedStatefulSetScale(args) : await this.apps.readNamespacedDeploymentScale(args);
      } catch (err) {
        if (httpStatus(err) === 404) return false;
        throw err;
      }
      if ((scale.spec?.replicas ?? 0) >= floor) return false;
      const body = { ...scale, spec: { ...scale.spec, replicas: floor } };
      this.counts.scale++;
      try {
        await (sts ? this.apps.replaceNamespacedStatefulSetScale({ ...args, body, fieldManager: FIELD_MANAGER }) : this.apps.replaceNamespacedDeploymentScale({ ...args, body, fieldManager: FIELD_MANAGER }));
        return true;
      } catch (err) {
        // The workload's controller writes its status often (a new pod, a Ready one), and each
        // write moves the resourceVersion: read again. Past a few, the caller's retry takes over.
        if (httpStatus(err) !== 409 || attempt >= SCALE_ATTEMPTS) throw err;
      }
    }
  }

  /** Server-side apply with force under FIELD_MANAGER: creates or converges the object. */
  async apply<T extends KubernetesObject>(obj: T): Promise<T> {
    this.counts.apply++;
    return this.objects.patch(obj, undefined, undefined, FIELD_MANAGER, true, PatchStrategy.ServerSideApply);
  }

  /** The live object, or undefined when it does not exist. */
  async get(ref: ObjectRef): Promise<KubernetesObject | undefined> {
    this.counts.get++;
    try {
      return await this.objects.read({ apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name: ref.name, namespace: ref.namespace } });
    } catch (err) {
      if (httpStatus(err) === 404) return undefined;
      throw err;
    }
  }

  /**
   * Deletes with background propagation (dependents such as pods go too), or with Orphan
   * (dependents stay, for a recreated owner to adopt). With `uid`, the API
   * server deletes only that incarnation of the object, so a check-then-delete cannot hit an
   * object someone recreated in between. Returns false when the object was already gone.
   */
  async delete(ref: ObjectRef, uid?: string, propagation: 'Background' | 'Orphan' = 'Background'): Promise<boolean> {
    this.counts.delete++;
    try {
      await this.objects.delete(
        { apiVersion: ref.apiVersion, kind: ref.kind, metadata: { name: ref.name, namespace: ref.namespace } },
        undefined,
        undefined,
        undefined,
        undefined,
        propagation,
        uid ? { preconditions: { uid } } : undefined,
      );
      return true;
    } catch (err) {
      if (httpStatus(err) === 404) return false;
      throw err;
    }
  }

  /** Every object of a kind in a namespace matching the selector, following continue tokens. */
  async list(apiVersion: string, kind: string, namespace: string, labelSelector?: string, fieldSelector?: string): Promise<{ items: KubernetesObject[]; resourceVersion: string }> {
    const items: KubernetesObject[] = [];
    let cont: string | undefined;
    let resourceVersion = '';
    do {
      this.counts.list++;
      const page = await this.objects.list(apiVersion, kind, namespace, undefined, undefined, undefined, fieldSelector, labelSelector, LIST_PAGE, cont);
      for (const it of page.items) items.push({ ...it, apiVersion: it.apiVersion ?? apiVersion, kind: it.kind ?? kind });
      resourceVersion = page.metadata?.resourceVersion ?? resourceVersion;
      cont = page.metadata?._continue || undefined;
    } while (cont);
    return { items, resourceVersion };
  }

  /** Opens a watch; `done` runs once when it ends for any reason. Abort the returned controller to stop. */
  watch(
    path: string,
    params: Record<string, string | number | boolean | undefined>,
    onEvent: (type: string, obj: any) => void,
    done: (err: unknown) => void,
  ): Promise<AbortController> {
    this.counts.watch++;
    return this.watcher.watch(path, params, onEvent, done);
  }
}

/**
 * What `kc.makeApiClient` configures (the current cluster's server, the kubeconfig's
 * credentials), with every request given up after `timeoutMs`. For any generated API class:
 * krane's Lease clients use it too.
 */
export function timedConfiguration(kc: KubeConfig, timeoutMs: number): Configuration {
  const cluster = kc.getCurrentCluster();
  if (!cluster) throw new Error('the kubeconfig has no current cluster');
  return createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    authMethods: { default: kc },
    promiseMiddleware: [
      {
        pre: async (ctx) => {
          ctx.setSignal(AbortSignal.timeout(timeoutMs));
          return ctx;
        },
        post: async (res) => res,
      },
    ],
  });
}

/** KubernetesObjectApi as makeApiClient builds it, on a given configuration: the kubeconfig's
 *  namespace is the default (setDefaultNamespace is protected). */
class ObjectApi extends KubernetesObjectApi {
  constructor(kc: KubeConfig, configuration: Configuration) {
    super(configuration);
    this.setDefaultNamespace(kc);
  }
}

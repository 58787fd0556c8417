// One API request on a resource path, mapped onto SimApi: get/list (as objects or Tables),
// watch, create, update, patch and apply, delete and deletecollection, and the status, scale
// and log subresources. The caller (server.ts) records stats and turns errors into Statuses.
import type { IncomingMessage, ServerResponse } from 'node:http';
import { loadYaml } from '@kubernetes/client-node';
import { selfSubjectAccessReview } from './access';
import type { Actor } from './audit';
import type { UserInfo } from './auth';
import type { Attributes, Decision } from './rbac';
import type { PropagationPolicy } from './deletion';
import { containerLog, formatLine, renderLog, type LogQuery } from './logs';
import type { ObjectStore } from './object-store';
import { apiVersionOf, mustResourceForKind, type ResourceDef } from './resources';
import { boolParam, intParam, listParams } from './params';
import { PATCH_TYPES, type SimApi } from './sim-api';
import { badRequest, entityTooLarge, REQUEST_BODY_LIMIT, SimError, successStatus } from './status';
import type { Verb } from './stats';
import { tableVersion, toTable, type IncludeObject } from './tables';
import type { KubeObject } from './types';
import { serveWatch, withTypeMeta, type WatchHost } from './watch';
import type { Fault } from './workloads/pod-status';

export interface Route {
  def: ResourceDef;
  namespace?: string;
  name?: string;
  subresource?: string;
  watchPath: boolean;
  /** Who asks (set once authenticated). */
  user?: UserInfo;
}

export interface RequestHost extends WatchHost {
  readonly api: SimApi;
  readonly store: ObjectStore;
  /** Milliseconds between the health-check lines of a running container's log. */
  readonly logIntervalMs: number;
  faultFor(pod: KubeObject, image: string | undefined): Fault | undefined;
  authorize(user: UserInfo, attrs: Attributes): Decision;
  /** Registers an open stream (watch, log follow) so close() can end it. */
  track(stop: () => void, res: ServerResponse): void;
  /** Refuses a write of namespace/name that a denial names (denials.ts). */
  checkWrite?(namespace: string, name: string | undefined): void;
}

const SUBRESOURCES = new Set(['status', 'scale', 'log']);
const POD = mustResourceForKind('v1', 'Pod');

/** Reads the body, refusing more than the API server's limit (the rest is drained unread). */
export async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  let tooLarge = false;
  for await (const c of req) {
    size += (c as Buffer).length;
    if (size > REQUEST_BODY_LIMIT) tooLarge = true;
    if (!tooLarge) chunks.push(c as Buffer);
  }
  if (tooLarge) throw entityTooLarge();
  return Buffer.concat(chunks).toString('utf8');
}

function parseBody(text: string, contentType: string): unknown {
  if (text.trim() === '') return undefined;
  try {
    return JSON.parse(text);
  } catch {
    if (contentType.includes('yaml')) {
      try {
        return loadYaml(text);
      } catch {
        /* fall through to the error below */
      }
    }
    throw badRequest('the request body could not be decoded');
  }
}

/**
 * Admission warnings as the API server sends them: one `Warning: 299 - "text"` header each,
 * the text quoted with `"` and `\` escaped (apimachinery's NewWarningHeader); kubectl prints
 * each as `Warning: text` on stderr.
 */
function warningHeaders(warnings: string[] | undefined): Record<string, string[]> {
  if (!warnings?.length) return {};
  return { warning: warnings.map((w) => `299 - "${w.replace(/["\\]/g, (c) => `\\${c}`)}"`) };
}

export function send(res: ServerResponse, code: number, body: unknown, headers: Record<string, string | string[]> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

export const isWatch = (route: Route, q: URLSearchParams) => route.watchPath || boolParam(q, 'watch');

export function verbOf(method: string, route: Route, q: URLSearchParams, contentType: string): Verb {
  if (method === 'GET') return isWatch(route, q) ? 'watch' : route.name ? 'get' : 'list';
  if (method === 'POST') return 'create';
  if (method === 'PUT') return 'update';
  if (method === 'PATCH') return contentType === PATCH_TYPES.apply ? 'apply' : 'patch';
  return route.name ? 'delete' : 'deletecollection';
}

export async function handleResource(host: RequestHost, req: IncomingMessage, res: ServerResponse, route: Route, q: URLSearchParams): Promise<{ verb: Verb; changed?: boolean }> {
  const { def, name, subresource } = route;
  const method = req.method ?? 'GET';
  if (def.namespaced && route.namespace === undefined && !(method === 'GET' && !name)) {
    throw new SimError(404, 'NotFound', `the server could not find the requested resource`, {});
  }
  if (subresource !== undefined && (!SUBRESOURCES.has(subresource) || (subresource === 'scale' && !def.scalable) || (subresource === 'log' && def.kind !== 'Pod'))) {
    throw new SimError(404, 'NotFound', `the server could not find the requested resource`, {});
  }
  if (def.verbs && !def.verbs.includes(verbOf(method, route, q, ''))) {
    throw new SimError(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`);
  }
  if (method === 'GET') return handleRead(host, req, res, route, q);
  const contentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  const body = parseBody(await readBody(req), contentType);
  if (method === 'DELETE') return handleDelete(host, req, res, route, q, body);
  const ns = route.namespace ?? '';
  const opts = { fieldManager: q.get('fieldManager') ?? undefined, dryRun: q.getAll('dryRun').includes('All'), force: boolParam(q, 'force') };
  const api = host.api;
  // Admission webhooks see writes of the object itself (their rules here name no subresource).
  if (subresource === undefined && def.kind !== 'SelfSubjectAccessReview') host.checkWrite?.(ns, name ?? bodyName(body));
  if (method === 'POST' && !name && def.kind === 'SelfSubjectAccessReview') {
    const user = route.user ?? { name: '', groups: [] };
    send(res, 201, selfSubjectAccessReview(body, user, (a) => host.authorize(user, a)));
    return { verb: 'create', changed: false };
  }
  if (method === 'POST' && !name) {
    const r = api.create(def, ns, body, opts);
    send(res, 201, r.object, warningHeaders(r.warnings));
    return { verb: 'create', changed: r.changed };
  }
  if (method === 'PUT' && name) {
    const r = subresource === 'status' ? api.replaceStatus(def, ns, name, body, opts) : subresource === 'scale' ? api.writeScale(def, ns, name, scaleBody(body), opts) : api.replace(def, ns, name, body, opts);
    send(res, 200, r.object, warningHeaders(r.warnings));
    return { verb: 'update', changed: r.changed };
  }
  if (method === 'PATCH' && name) {
    let r;
    if (subresource === 'status') r = api.patchStatus(def, ns, name, contentType, body, opts);
    else if (subresource === 'scale') r = api.writeScale(def, ns, name, api.patchedScale(def, ns, name, contentType, body), opts);
    else r = api.patch(def, ns, name, contentType, body, opts);
    send(res, r.created ? 201 : 200, r.object, warningHeaders(r.warnings));
    return { verb: contentType === PATCH_TYPES.apply ? 'apply' : 'patch', changed: r.changed };
  }
  throw new SimError(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`);
}

/** metadata.name of a create's body, when it has one. */
function bodyName(body: unknown): string | undefined {
  const name = (body as { metadata?: { name?: unknown } } | null)?.metadata?.name;
  return typeof name === 'string' ? name : undefined;
}

function scaleBody(body: unknown): KubeObject {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw badRequest('the request body must be a JSON object');
  const b = body as KubeObject;
  return { ...b, metadata: b.metadata ?? {} };
}

function handleRead(host: RequestHost, req: IncomingMessage, res: ServerResponse, route: Route, q: URLSearchParams): { verb: Verb } {
  const { def, name } = route;
  const ns = route.namespace ?? '';
  const table = route.subresource ? undefined : tableVersion(req.headers.accept);
  const include = (q.get('includeObject') ?? 'Metadata') as IncludeObject;
  const list = name ? undefined : listParams(q, route.watchPath);
  if (isWatch(route, q)) {
    const stop = serveWatch(host, req, res, { def, namespace: route.namespace, name, query: q, table });
    if (stop) host.track(stop, res);
    return { verb: 'watch' };
  }
  if (name) {
    if (route.subresource === 'log') {
      serveLog(host, req, res, host.api.get(def, ns, name), q);
      return { verb: 'get' };
    }
    const obj = route.subresource === 'scale' ? host.api.getScale(def, ns, name) : withTypeMeta(def, host.api.get(def, ns, name));
    send(res, 200, table ? toTable(def, [obj], { include, now: Date.now(), version: table, resourceVersion: obj.metadata.resourceVersion }) : obj);
    return { verb: 'get' };
  }
  const page = host.api.list(def, route.namespace, {
    labelSelector: q.get('labelSelector') ?? undefined,
    fieldSelector: q.get('fieldSelector') ?? undefined,
    limit: list?.limit ?? 0,
    continue: list?.continue,
  });
  if (table) {
    send(res, 200, toTable(def, page.items, { include, now: Date.now(), version: table, resourceVersion: page.resourceVersion, continue: page.continue }));
    return { verb: 'list' };
  }
  send(res, 200, {
    kind: `${def.kind}List`,
    apiVersion: apiVersionOf(def),
    metadata: { resourceVersion: page.resourceVersion, ...(page.continue ? { continue: page.continue } : {}) },
    items: page.items.map((o) => withTypeMeta(def, o)),
  });
  return { verb: 'list' };
}

function handleDelete(host: RequestHost, req: IncomingMessage, res: ServerResponse, route: Route, q: URLSearchParams, body: unknown): { verb: Verb; changed: boolean } {
  const { def, name } = route;
  const ns = route.namespace ?? '';
  const dryRun = q.getAll('dryRun').includes('All');
  const b = (body ?? {}) as { propagationPolicy?: string; preconditions?: { uid?: string; resourceVersion?: string }; orphanDependents?: boolean };
  const orphan = boolParam(q, 'orphanDependents') || b.orphanDependents === true;
  const policy = (q.get('propagationPolicy') ?? b.propagationPolicy ?? (orphan ? 'Orphan' : undefined)) as PropagationPolicy | undefined;
  const actor: Actor = { cause: name ? 'request' : 'collection', ...(req.headers['user-agent'] ? { userAgent: req.headers['user-agent'] } : {}), ...(q.get('fieldManager') ? { manager: q.get('fieldManager')! } : {}) };
  if (name) {
    const gone = host.api.delete(def, ns, name, { propagationPolicy: policy, preconditions: b.preconditions, dryRun, actor });
    // Like the API server: pods (graceful deletion), namespaces and objects held by
    // finalizers answer with the object, the rest with a Success status.
    const held = gone.metadata.deletionTimestamp !== undefined && host.store.get(def, ns, name) !== undefined;
    send(res, 200, held || def.kind === 'Namespace' || def.kind === 'Pod' ? withTypeMeta(def, gone) : successStatus(def, name, gone.metadata.uid));
    return { verb: 'delete', changed: !dryRun };
  }
  const gone = host.api.deleteCollection(def, route.namespace, {
    labelSelector: q.get('labelSelector') ?? undefined,
    fieldSelector: q.get('fieldSelector') ?? undefined,
    propagationPolicy: policy,
    dryRun,
    actor,
  });
  send(res, 200, { kind: `${def.kind}List`, apiVersion: apiVersionOf(def), metadata: { resourceVersion: host.api.currentResourceVersion }, items: gone.map((o) => withTypeMeta(def, o)) });
  return { verb: 'deletecollection', changed: gone.length > 0 && !dryRun };
}

/** GET pods/{name}/log: text/plain; with follow=true the stream stays open while the container runs. */
function serveLog(host: RequestHost, req: IncomingMessage, res: ServerResponse, pod: KubeObject, q: URLSearchParams): void {
  const query: LogQuery = {
    container: q.get('container') ?? undefined,
    previous: boolParam(q, 'previous'),
    tailLines: intParam(q, 'tailLines'),
    sinceSeconds: intParam(q, 'sinceSeconds'),
    timestamps: boolParam(q, 'timestamps'),
    limitBytes: intParam(q, 'limitBytes'),
  };
  const image = (pod.spec?.containers ?? []).find((c: { name: string }) => c.name === query.container)?.image ?? pod.spec?.containers?.[0]?.image;
  const now = Date.now();
  const log = containerLog(pod, query, host.faultFor(pod, image), host.logIntervalMs, now);
  const text = renderLog(log.lines, query, now);
  const follow = boolParam(q, 'follow') && log.running && !query.previous;
  res.writeHead(200, { 'content-type': 'text/plain', ...(follow ? { 'transfer-encoding': 'chunked' } : { 'content-length': Buffer.byteLength(text) }) });
  if (!follow) {
    res.end(text);
    return;
  }
  res.write(text);
  let last = now;
  const timer = setInterval(() => {
    const current = host.store.get(POD, pod.metadata.namespace ?? '', pod.metadata.name!);
    if (!current || current.metadata.uid !== pod.metadata.uid) return stop();
    const t = Date.now();
    let next;
    try {
      next = containerLog(current, query, undefined, host.logIntervalMs, t);
    } catch {
      return stop();
    }
    if (!next.running) return stop();
    for (const l of next.lines) if (l.at > last && l.at <= t) res.write(formatLine(l, query.timestamps));
    last = t;
  }, host.logIntervalMs);
  const stop = () => {
    clearInterval(timer);
    if (!res.writableEnded) res.end();
  };
  req.on('close', stop);
  host.track(stop, res);
}

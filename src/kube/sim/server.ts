// The HTTP front of the simulator: Kubernetes REST paths (discovery, collections, objects,
// `/status`, watch streams) mapped onto KubeApi, plus the admin endpoints under `/_sim`.
// Plain node:http: the client speaks JSON over HTTP/1.1 and watch is a chunked stream of
// JSON lines, which is all this needs.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { loadYaml } from '@kubernetes/client-node';
import type { Logger } from '../../log';
import { PATCH_TYPES, type KubeApi } from './api';
import {
  apiGroupDoc,
  apiGroupListDoc,
  apiResourceListDoc,
  apiVersionOf,
  apiVersionsDoc,
  findResource,
  versionDoc,
  type ResourceDef,
} from './resources';
import { matchFields, matchLabels, parseFieldSelector, parseLabelSelector } from './selectors';
import { badRequest, goneError, SimError, successStatus } from './status';
import type { SimStats, Verb } from './stats';
import type { ObjectStore, Subscriber } from './store';
import type { KubeObject, WatchEventType } from './types';

export interface SimHost {
  readonly api: KubeApi;
  readonly store: ObjectStore;
  readonly stats: SimStats;
  readonly logger: Logger;
  readonly bookmarkIntervalMs: number;
  /** Handles `/_sim/...`; returns the JSON body and status, or undefined for 404. */
  admin(method: string, path: string, body: unknown): { status: number; body: unknown } | undefined;
}

interface Route {
  def: ResourceDef;
  namespace?: string;
  name?: string;
  subresource?: string;
  watchPath: boolean;
}

function parseRoute(segs: string[]): Route | { discovery: unknown } | undefined {
  let group: string;
  let version: string;
  let rest: string[];
  if (segs[0] === 'api') {
    if (segs.length === 1) return { discovery: 'apiVersions' };
    if (segs[1] !== 'v1') return undefined;
    group = '';
    version = 'v1';
    rest = segs.slice(2);
  } else if (segs[0] === 'apis') {
    if (segs.length === 1) return { discovery: apiGroupListDoc() };
    if (segs.length === 2) {
      const doc = apiGroupDoc(segs[1]!);
      return doc ? { discovery: doc } : undefined;
    }
    group = segs[1]!;
    version = segs[2]!;
    rest = segs.slice(3);
  } else return undefined;
  if (rest.length === 0) {
    const doc = apiResourceListDoc(group, version);
    return doc ? { discovery: doc } : undefined;
  }
  let watchPath = false;
  if (rest[0] === 'watch') {
    watchPath = true;
    rest = rest.slice(1);
  }
  let namespace: string | undefined;
  if (rest[0] === 'namespaces' && rest.length >= 3 && rest[2] !== 'status' && rest[2] !== 'finalize') {
    namespace = rest[1];
    rest = rest.slice(2);
  }
  const def = findResource(group, version, rest[0]!);
  if (!def || rest.length > 3) return undefined;
  if (!def.namespaced && namespace !== undefined) return undefined;
  return { def, namespace, name: rest[1], subresource: rest[2], watchPath };
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
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

function send(res: ServerResponse, code: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(code, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

const withTypeMeta = (def: ResourceDef, o: KubeObject): KubeObject =>
  o.apiVersion && o.kind ? o : { ...o, apiVersion: apiVersionOf(def), kind: def.kind };

export interface SimServer {
  server: Server;
  closeWatches(): void;
}

export function createSimServer(host: SimHost): SimServer {
  const watches = new Set<() => void>();

  const handleWatch = (req: IncomingMessage, res: ServerResponse, route: Route, q: URLSearchParams) => {
    const { def } = route;
    const labels = parseLabelSelector(q.get('labelSelector'));
    const fields = parseFieldSelector(q.get('fieldSelector'), def.kind);
    if (route.name) fields.push({ path: ['metadata', 'name'], op: 'eq', value: route.name });
    const filter = (o: KubeObject) => matchLabels(labels, o.metadata.labels) && matchFields(fields, o);
    const rvParam = q.get('resourceVersion') ?? '';
    const bookmarks = q.get('allowWatchBookmarks') === 'true';
    const initialEvents = q.get('sendInitialEvents') === 'true';
    let since: number | undefined;
    if (rvParam !== '' && rvParam !== '0' && !initialEvents) {
      since = Number(rvParam);
      if (!Number.isInteger(since) || since < 0) throw badRequest(`invalid resourceVersion ${JSON.stringify(rvParam)}`);
    }
    res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked', 'cache-control': 'no-cache' });
    res.flushHeaders();
    const write = (type: string, object: unknown) => {
      if (!res.writableEnded) res.write(JSON.stringify({ type, object }) + '\n');
    };
    const sub: Subscriber = {
      namespace: def.namespaced ? route.namespace : undefined,
      filter,
      send: (type: WatchEventType, obj: KubeObject) => write(type, withTypeMeta(def, obj)),
    };
    let timers: NodeJS.Timeout[] = [];
    const stop = () => {
      host.store.unsubscribe(def, sub);
      for (const t of timers) clearInterval(t);
      timers = [];
      watches.delete(stop);
      if (!res.writableEnded) res.end();
    };
    const bookmark = (annotations?: Record<string, string>) =>
      write('BOOKMARK', { kind: def.kind, apiVersion: apiVersionOf(def), metadata: { resourceVersion: String(host.store.resourceVersion), ...(annotations ? { annotations } : {}) } });
    if (since === undefined) {
      const items = host.store.list(def, def.namespaced ? route.namespace : undefined);
      for (const o of items) if (filter(o)) write('ADDED', withTypeMeta(def, o));
      if (initialEvents && bookmarks) bookmark({ 'k8s.io/initial-events-end': 'true' });
      host.store.subscribe(def, sub);
    } else if (host.store.watchFrom(def, since, sub) === 'expired') {
      const err = goneError(`too old resource version: ${since} (${host.store.resourceVersion})`);
      write('ERROR', err.status);
      res.end();
      return;
    }
    watches.add(stop);
    if (bookmarks) timers.push(setInterval(() => bookmark(), host.bookmarkIntervalMs));
    const timeout = Number(q.get('timeoutSeconds') ?? '');
    if (Number.isFinite(timeout) && timeout > 0) timers.push(setTimeout(stop, timeout * 1000));
    req.on('close', stop);
    res.on('close', stop);
  };

  const handleResource = async (req: IncomingMessage, res: ServerResponse, route: Route, q: URLSearchParams): Promise<{ verb: Verb; changed?: boolean }> => {
    const { def, name, subresource } = route;
    const ns = route.namespace ?? '';
    const method = req.method ?? 'GET';
    const contentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    const fieldManager = q.get('fieldManager') ?? undefined;
    const dryRun = q.getAll('dryRun').includes('All');
    const force = q.get('force') === 'true';
    if (def.namespaced && route.namespace === undefined && !(method === 'GET' && !name)) {
      throw new SimError(404, 'NotFound', `the server could not find the requested resource`);
    }
    if (subresource !== undefined && subresource !== 'status') {
      throw new SimError(404, 'NotFound', `the server could not find the requested resource`);
    }
    const isWatch = route.watchPath || q.get('watch') === 'true' || q.get('watch') === '1';
    if (method === 'GET') {
      if (isWatch) {
        handleWatch(req, res, route, q);
        return { verb: 'watch' };
      }
      if (name) {
        send(res, 200, withTypeMeta(def, host.api.get(def, ns, name)));
        return { verb: 'get' };
      }
      const limit = Number(q.get('limit') ?? '0');
      const list = host.api.list(def, route.namespace, {
        labelSelector: q.get('labelSelector') ?? undefined,
        fieldSelector: q.get('fieldSelector') ?? undefined,
        limit: Number.isFinite(limit) ? limit : 0,
        continue: q.get('continue') ?? undefined,
      });
      send(res, 200, {
        kind: `${def.kind}List`,
        apiVersion: apiVersionOf(def),
        metadata: { resourceVersion: list.resourceVersion, ...(list.continue ? { continue: list.continue } : {}) },
        items: list.items.map((o) => withTypeMeta(def, o)),
      });
      return { verb: 'list' };
    }
    const body = parseBody(await readBody(req), contentType);
    const opts = { fieldManager, dryRun, force };
    if (method === 'POST' && !name) {
      const r = host.api.create(def, ns, body, opts);
      send(res, 201, r.object);
      return { verb: 'create', changed: r.changed };
    }
    if (method === 'PUT' && name) {
      const r = subresource === 'status' ? host.api.replaceStatus(def, ns, name, body, opts) : host.api.replace(def, ns, name, body, opts);
      send(res, 200, r.object);
      return { verb: 'update', changed: r.changed };
    }
    if (method === 'PATCH' && name) {
      const r = subresource === 'status'
        ? host.api.patchStatus(def, ns, name, contentType, body, opts)
        : host.api.patch(def, ns, name, contentType, body, opts);
      send(res, r.created ? 201 : 200, r.object);
      return { verb: contentType === PATCH_TYPES.apply ? 'apply' : 'patch', changed: r.changed };
    }
    if (method === 'DELETE') {
      const b = (body ?? {}) as { propagationPolicy?: string; preconditions?: { uid?: string; resourceVersion?: string }; orphanDependents?: boolean };
      const policy = (q.get('propagationPolicy') ?? b.propagationPolicy ?? (q.get('orphanDependents') === 'true' || b.orphanDependents ? 'Orphan' : undefined)) as
        | 'Orphan'
        | 'Background'
        | 'Foreground'
        | undefined;
      if (name) {
        const gone = host.api.delete(def, ns, name, { propagationPolicy: policy, preconditions: b.preconditions, dryRun });
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
      });
      send(res, 200, { kind: `${def.kind}List`, apiVersion: apiVersionOf(def), metadata: { resourceVersion: host.api.currentResourceVersion }, items: gone.map((o) => withTypeMeta(def, o)) });
      return { verb: 'deletecollection', changed: gone.length > 0 && !dryRun };
    }
    throw new SimError(405, 'MethodNotAllowed', `the server does not allow this method on the requested resource`);
  };

  const verbOf = (method: string, route: Route, q: URLSearchParams, contentType: string): Verb => {
    if (method === 'GET') return route.watchPath || q.get('watch') === 'true' || q.get('watch') === '1' ? 'watch' : route.name ? 'get' : 'list';
    if (method === 'POST') return 'create';
    if (method === 'PUT') return 'update';
    if (method === 'PATCH') return contentType === PATCH_TYPES.apply ? 'apply' : 'patch';
    return route.name ? 'delete' : 'deletecollection';
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    const url = new URL(req.url ?? '/', 'http://kube-sim');
    const segs = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
    const method = req.method ?? 'GET';
    if (segs[0] === '_sim') {
      const text = await readBody(req);
      let body: unknown;
      try {
        body = text.trim() ? JSON.parse(text) : {};
      } catch {
        return send(res, 400, { error: 'invalid JSON body' });
      }
      const r = host.admin(method, '/' + segs.slice(1).join('/'), body);
      return r ? send(res, r.status, r.body) : send(res, 404, { error: 'unknown admin endpoint' });
    }
    if (segs.length === 1 && ['healthz', 'livez', 'readyz'].includes(segs[0]!)) {
      res.writeHead(200, { 'content-type': 'text/plain' });
      return res.end('ok');
    }
    if (segs.length === 1 && segs[0] === 'version') {
      host.stats.record('discovery', undefined, { status: 200 });
      return send(res, 200, versionDoc());
    }
    const route = parseRoute(segs);
    if (!route) {
      host.stats.record('discovery', undefined, { status: 404 });
      const e = new SimError(404, 'NotFound', 'the server could not find the requested resource');
      return send(res, 404, e.status);
    }
    if ('discovery' in route) {
      host.stats.record('discovery', undefined, { status: 200 });
      const host_ = req.headers.host ?? '127.0.0.1';
      return send(res, 200, route.discovery === 'apiVersions' ? apiVersionsDoc(host_) : route.discovery);
    }
    const contentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
    const resource = route.subresource ? `${route.def.plural}/${route.subresource}` : route.def.plural;
    try {
      const r = await handleResource(req, res, route, url.searchParams);
      host.stats.record(r.verb, resource, { status: 200, changed: r.changed });
      host.logger.debug({ verb: r.verb, resource, namespace: route.namespace, name: route.name, changed: r.changed }, 'kube-sim request');
    } catch (err) {
      const verb = verbOf(method, route, url.searchParams, contentType);
      if (err instanceof SimError) {
        host.stats.record(verb, resource, { status: err.code });
        host.logger.debug({ verb, resource, namespace: route.namespace, name: route.name, code: err.code, reason: err.status.reason }, 'kube-sim request failed');
        if (!res.headersSent) send(res, err.code, err.status);
        return;
      }
      host.stats.record(verb, resource, { status: 500 });
      host.logger.error({ err, method, path: url.pathname }, 'kube-sim request failed');
      if (!res.headersSent) send(res, 500, new SimError(500, 'InternalError', err instanceof Error ? err.message : String(err)).status);
    }
  };

  const server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      host.logger.error({ err }, 'kube-sim handler crashed');
      if (!res.headersSent) send(res, 500, { error: 'internal' });
    });
  });
  // Keep-alive sockets from clients must not hold close() open forever.
  server.keepAliveTimeout = 5_000;
  return {
    server,
    closeWatches() {
      for (const stop of [...watches]) stop();
    },
  };
}

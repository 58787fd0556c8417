// The HTTP front of the simulator: Kubernetes REST paths (discovery, OpenAPI, collections,
// objects, subresources, watch streams) mapped onto requests.ts, the traffic controls
// (rate limit and chaos, chaos.ts) in front of them, and the admin endpoints under `/_sim`.
// Plain node:http: clients speak JSON over HTTP/1.1 and watch is a chunked stream of JSON
// lines, which is all this needs.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Server as NetServer } from 'node:net';
import type { Logger } from '../log';
import { requestAttributes } from './access';
import type { UserInfo } from './auth';
import type { TrafficControl } from './chaos';
import { forbidden, type Attributes, type Decision } from './rbac';
import { apiGroupDoc, apiGroupListDoc, apiResourceListDoc, apiVersionsDoc, findResource, versionDoc, type Served } from './resources';
import { handleResource, readBody, send, verbOf, type RequestHost, type Route } from './requests';
import { PATCH_TYPES } from './sim-api';
import { SimError } from './status';
import { dualProtocol } from './tls';
import type { SimStats } from './stats';

export interface SimHost extends Omit<RequestHost, 'track'> {
  readonly stats: SimStats;
  readonly logger: Logger;
  readonly traffic: TrafficControl;
  /** Handles `/_sim/...`; returns the JSON body and status, or undefined for 404. */
  admin(method: string, path: string, body: unknown, query: URLSearchParams): { status: number; body: unknown } | undefined;
  /** Serves `/openapi/...`; undefined for paths it does not know. */
  openapi(path: string, accept: string | undefined): { status: number; body: unknown } | undefined;
  /** The requester of an Authorization header (401 SimError for a bad credential). */
  authenticate(authorization: string | undefined): UserInfo;
  authorize(user: UserInfo, attrs: Attributes): Decision;
  /** Whether a resource type is served now (custom resources need their CRD). */
  served: Served;
}

function parseRoute(segs: string[], served: Served): Route | { discovery: unknown } | undefined {
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
    if (segs.length === 1) return { discovery: apiGroupListDoc(served) };
    if (segs.length === 2) {
      const doc = apiGroupDoc(segs[1]!, served);
      return doc ? { discovery: doc } : undefined;
    }
    group = segs[1]!;
    version = segs[2]!;
    rest = segs.slice(3);
  } else return undefined;
  if (rest.length === 0) {
    const doc = apiResourceListDoc(group, version, served);
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
  const def = findResource(group, version, rest[0]!, served);
  if (!def || rest.length > 3) return undefined;
  if (!def.namespaced && namespace !== undefined) return undefined;
  return { def, namespace, name: rest[1], subresource: rest[2], watchPath };
}

export interface SimServer {
  server: Server;
  /** What listens: plain HTTP and TLS on one port (tls.ts). */
  listener: NetServer;
  closeAllConnections(): void;
  closeWatches(): void;
}

const NOT_FOUND = () => new SimError(404, 'NotFound', 'the server could not find the requested resource', {});

/** Answers a rate-limited or chaos-throttled request the way the API server's filter does:
 *  plain text and a Retry-After header, no Status body. */
function throttled(res: ServerResponse, retryAfterSeconds: number): void {
  const text = 'Too many requests, please try again later.\n';
  res.writeHead(429, { 'content-type': 'text/plain; charset=utf-8', 'x-content-type-options': 'nosniff', 'retry-after': String(retryAfterSeconds), 'content-length': Buffer.byteLength(text) });
  res.end(text);
}

async function handleApi(host: SimHost, requestHost: RequestHost, req: IncomingMessage, res: ServerResponse, url: URL, route: Route): Promise<void> {
  const method = req.method ?? 'GET';
  const contentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  const resource = route.subresource ? `${route.def.plural}/${route.subresource}` : route.def.plural;
  const verb = verbOf(method, route, url.searchParams, contentType);
  const decision = host.traffic.check(verb, resource);
  if (decision.action === 'throttle') {
    host.stats.record(verb, resource, { status: 429 });
    return throttled(res, decision.retryAfterSeconds);
  }
  if (decision.action === 'error') {
    host.stats.record(verb, resource, { status: 500 });
    return send(res, 500, new SimError(500, 'InternalError', 'Internal error occurred: kube-sim chaos: injected failure').status);
  }
  if (decision.action === 'delay') await new Promise((r) => setTimeout(r, decision.ms));
  try {
    const r = await handleResource(requestHost, req, res, route, url.searchParams);
    host.stats.record(r.verb, resource, { status: 200, changed: r.changed });
    host.logger.debug({ verb: r.verb, resource, namespace: route.namespace, name: route.name, changed: r.changed }, 'kube-sim request');
  } catch (err) {
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
}

async function handleAdmin(host: SimHost, req: IncomingMessage, res: ServerResponse, url: URL, segs: string[]): Promise<void> {
  let body: unknown;
  try {
    const text = await readBody(req);
    body = text.trim() ? JSON.parse(text) : {};
  } catch {
    return send(res, 400, { error: 'invalid JSON body' });
  }
  const r = host.admin(req.method ?? 'GET', '/' + segs.slice(1).join('/'), body, url.searchParams);
  return r ? send(res, r.status, r.body) : send(res, 404, { error: 'unknown admin endpoint' });
}

/**
 * Authentication, then authorization, before anything is looked up, as the API server's
 * filter chain runs them. A server-side apply that would create the object is also
 * authorized as a create (the patch handler's withAuthorization), refused with its
 * reason-less Forbidden.
 */
function admit(host: SimHost, req: IncomingMessage, url: URL, segs: string[], route: Route | undefined): UserInfo {
  const user = host.authenticate(req.headers.authorization);
  const attrs = requestAttributes(req.method ?? 'GET', url.pathname, segs, url.searchParams);
  if (!host.authorize(user, attrs).allowed) throw forbidden(user, attrs);
  const contentType = (req.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (route && req.method === 'PATCH' && contentType === PATCH_TYPES.apply && !route.subresource && route.name) {
    const exists = host.store.get(route.def, route.namespace ?? '', route.name) !== undefined;
    const create = { ...attrs, verb: 'create' };
    if (!exists && !host.authorize(user, create).allowed) throw forbidden(user, create, '');
  }
  return user;
}

async function handle(host: SimHost, requestHost: RequestHost, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const url = new URL(req.url ?? '/', 'http://kube-sim');
  const segs = url.pathname.split('/').filter(Boolean).map(decodeURIComponent);
  if (segs[0] === '_sim') return handleAdmin(host, req, res, url, segs);
  const parsed = parseRoute(segs, host.served);
  const user = admit(host, req, url, segs, parsed && !('discovery' in parsed) ? parsed : undefined);
  if (segs.length === 1 && ['healthz', 'livez', 'readyz'].includes(segs[0]!)) {
    res.writeHead(200, { 'content-type': 'text/plain' });
    return void res.end('ok');
  }
  if (segs[0] === 'openapi') {
    const r = host.openapi(segs.join('/'), req.headers.accept);
    return r ? send(res, r.status, r.body) : send(res, 404, NOT_FOUND().status);
  }
  if (segs.length === 1 && segs[0] === 'version') {
    host.stats.record('discovery', undefined, { status: 200 });
    return send(res, 200, versionDoc());
  }
  const route = parsed;
  if (!route) {
    host.stats.record('discovery', undefined, { status: 404 });
    return send(res, 404, NOT_FOUND().status);
  }
  if ('discovery' in route) {
    host.stats.record('discovery', undefined, { status: 200 });
    return send(res, 200, route.discovery === 'apiVersions' ? apiVersionsDoc(req.headers.host ?? '127.0.0.1') : route.discovery);
  }
  return handleApi(host, requestHost, req, res, url, { ...route, user });
}

export function createSimServer(host: SimHost): SimServer {
  const streams = new Set<() => void>();
  const requestHost: RequestHost = {
    api: host.api,
    store: host.store,
    bookmarkIntervalMs: host.bookmarkIntervalMs,
    logIntervalMs: host.logIntervalMs,
    faultFor: (pod, image) => host.faultFor(pod, image),
    authorize: (user, attrs) => host.authorize(user, attrs),
    checkWrite: (ns, name) => host.checkWrite?.(ns, name),
    track: (stop, res) => {
      streams.add(stop);
      res.on('close', () => streams.delete(stop));
    },
  };
  const server = createServer((req, res) => {
    handle(host, requestHost, req, res).catch((err) => {
      if (err instanceof SimError) {
        if (!res.headersSent) send(res, err.code, err.status);
        return;
      }
      host.logger.error({ err }, 'kube-sim handler crashed');
      if (!res.headersSent) send(res, 500, { error: 'internal' });
    });
  });
  // Keep-alive sockets from clients must not hold close() open forever.
  server.keepAliveTimeout = 5_000;
  const dual = dualProtocol(server);
  return {
    server,
    listener: dual.listener,
    closeAllConnections: () => dual.closeAllConnections(),
    closeWatches() {
      for (const stop of [...streams]) stop();
      streams.clear();
    },
  };
}

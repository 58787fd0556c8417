// Watch streams: chunked JSON lines of {type, object}, from a resourceVersion (replaying the
// retained events, or 410 Expired when they are gone) or from now with the current objects
// as ADDED first; bookmarks when asked; the initial-events-end bookmark for sendInitialEvents.
// A client that asked for Tables (kubectl get -w) gets each object as a one-row Table.
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ObjectStore, Subscriber } from './object-store';
import { boolParam, intParam } from './params';
import { apiVersionOf, type ResourceDef } from './resources';
import { matchFields, matchLabels, parseFieldSelector, parseLabelSelector } from './selectors';
import { badRequest, goneError } from './status';
import { toTable, type IncludeObject } from './tables';
import type { KubeObject, WatchEventType } from './types';

export interface WatchRequest {
  def: ResourceDef;
  namespace?: string;
  name?: string;
  query: URLSearchParams;
  /** meta.k8s.io Table version when the client asked for Tables. */
  table?: string;
}

export interface WatchHost {
  readonly store: ObjectStore;
  readonly bookmarkIntervalMs: number;
}

export const withTypeMeta = (def: ResourceDef, o: KubeObject): KubeObject => (o.apiVersion && o.kind ? o : { ...o, apiVersion: apiVersionOf(def), kind: def.kind });

/** Serves one watch; returns the function that ends it (for closing every watch at once). */
export function serveWatch(host: WatchHost, req: IncomingMessage, res: ServerResponse, w: WatchRequest): (() => void) | undefined {
  const { def, query: q } = w;
  const labels = parseLabelSelector(q.get('labelSelector'));
  const fields = parseFieldSelector(q.get('fieldSelector'), def.kind);
  if (w.name) fields.push({ path: ['metadata', 'name'], op: 'eq', value: w.name });
  const filter = (o: KubeObject) => matchLabels(labels, o.metadata.labels) && matchFields(fields, o);
  const rvParam = q.get('resourceVersion') ?? '';
  const bookmarks = boolParam(q, 'allowWatchBookmarks');
  const initialEvents = boolParam(q, 'sendInitialEvents');
  let since: number | undefined;
  if (rvParam !== '' && rvParam !== '0' && !initialEvents) {
    since = Number(rvParam);
    if (!Number.isInteger(since) || since < 0) throw badRequest(`invalid resourceVersion ${JSON.stringify(rvParam)}`);
  }
  res.writeHead(200, { 'content-type': 'application/json', 'transfer-encoding': 'chunked', 'cache-control': 'no-cache' });
  res.flushHeaders();
  const include = (q.get('includeObject') ?? 'Metadata') as IncludeObject;
  const render = (o: KubeObject) => (w.table ? toTable(def, [o], { include, now: Date.now(), version: w.table }) : withTypeMeta(def, o));
  const write = (type: string, object: unknown) => {
    if (!res.writableEnded) res.write(JSON.stringify({ type, object }) + '\n');
  };
  const ns = def.namespaced ? w.namespace : undefined;
  const sub: Subscriber = { namespace: ns, filter, send: (type: WatchEventType, obj: KubeObject) => write(type, render(obj)) };
  let timers: NodeJS.Timeout[] = [];
  let stopped = false;
  const stop = () => {
    if (stopped) return;
    stopped = true;
    host.store.unsubscribe(def, sub);
    for (const t of timers) clearInterval(t);
    timers = [];
    if (!res.writableEnded) res.end();
  };
  const bookmark = (annotations?: Record<string, string>) =>
    write('BOOKMARK', { kind: def.kind, apiVersion: apiVersionOf(def), metadata: { resourceVersion: String(host.store.resourceVersion), ...(annotations ? { annotations } : {}) } });
  if (since === undefined) {
    for (const o of host.store.list(def, ns)) if (filter(o)) write('ADDED', render(o));
    if (initialEvents && bookmarks) bookmark({ 'k8s.io/initial-events-end': 'true' });
    host.store.subscribe(def, sub);
  } else if (host.store.watchFrom(def, since, sub) === 'expired') {
    write('ERROR', goneError(`too old resource version: ${since} (${host.store.resourceVersion})`).status);
    res.end();
    return undefined;
  }
  if (bookmarks) timers.push(setInterval(() => bookmark(), host.bookmarkIntervalMs));
  const timeout = intParam(q, 'timeoutSeconds') ?? 0;
  if (timeout > 0) timers.push(setTimeout(stop, timeout * 1000));
  req.on('close', stop);
  res.on('close', stop);
  return stop;
}

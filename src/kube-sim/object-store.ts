// The in-memory object store: one table per resource type, indexed by namespace then name, a
// single resourceVersion counter for the whole cluster (like etcd's revision), a bounded event
// log per type for watch resume, live watchers, and an owner index (owner uid → dependents)
// so cascade deletion does not scan every object. Everything is synchronous: a write assigns
// its resourceVersion, records its event and notifies watchers before returning, so a watcher
// that subscribes after replaying the log can never miss or reorder an event.
import { RESOURCES, resourceKey, type ResourceDef } from './resources';
import type { KubeObject, StoredEvent, WatchEventType } from './types';

export interface StoreOptions {
  /** Events kept per resource type for watch resume; older resourceVersions get 410 Gone. */
  eventWindow: number;
}

export interface Subscriber {
  namespace?: string;
  filter(obj: KubeObject): boolean;
  send(type: WatchEventType, obj: KubeObject): void;
}

interface Table {
  def: ResourceDef;
  byNs: Map<string, Map<string, KubeObject>>;
  events: StoredEvent[];
  /** resourceVersion of the newest event dropped from the log (0 when none). */
  droppedThrough: number;
  subscribers: Set<Subscriber>;
  count: number;
}

export type ChangeListener = (def: ResourceDef, ev: StoredEvent) => void;

const refKey = (def: ResourceDef, ns: string, name: string) => `${resourceKey(def)}|${ns}|${name}`;

export class ObjectStore {
  private rv = 0;
  private readonly tables = new Map<string, Table>();
  private readonly owners = new Map<string, Set<string>>();
  private readonly listeners: ChangeListener[] = [];

  constructor(private readonly opts: StoreOptions) {
    for (const def of RESOURCES) {
      this.tables.set(resourceKey(def), { def, byNs: new Map(), events: [], droppedThrough: 0, subscribers: new Set(), count: 0 });
    }
  }

  get resourceVersion(): number {
    return this.rv;
  }

  private table(def: ResourceDef): Table {
    const t = this.tables.get(resourceKey(def));
    if (!t) throw new Error(`kube-sim: no table for ${resourceKey(def)}`);
    return t;
  }

  onChange(listener: ChangeListener): void {
    this.listeners.push(listener);
  }

  get(def: ResourceDef, ns: string, name: string): KubeObject | undefined {
    return this.table(def).byNs.get(def.namespaced ? ns : '')?.get(name);
  }

  /** Objects of a type, in one namespace or (ns undefined) all of them, sorted by namespace/name. */
  list(def: ResourceDef, ns: string | undefined): KubeObject[] {
    const t = this.table(def);
    const out: KubeObject[] = [];
    const spaces = ns === undefined || !def.namespaced ? [...t.byNs.keys()].sort() : [ns];
    for (const s of spaces) {
      const m = t.byNs.get(s);
      if (!m) continue;
      const names = [...m.keys()].sort();
      for (const n of names) out.push(m.get(n)!);
    }
    return out;
  }

  /** The objects of one namespace in no particular order: for controllers, which need no
   *  sorting and run on every event (list() sorts, which costs O(n log n) each time). */
  *values(def: ResourceDef, ns: string): IterableIterator<KubeObject> {
    const m = this.table(def).byNs.get(def.namespaced ? ns : '');
    if (m) yield* m.values();
  }

  count(def: ResourceDef): number {
    return this.table(def).count;
  }

  /** Objects of a type in one namespace (cluster-scoped types: all of them). */
  countIn(def: ResourceDef, ns: string): number {
    return this.table(def).byNs.get(def.namespaced ? ns : '')?.size ?? 0;
  }

  /** Stores `obj` (already complete but for resourceVersion) and emits its event. */
  put(def: ResourceDef, obj: KubeObject): KubeObject {
    const t = this.table(def);
    const ns = def.namespaced ? obj.metadata.namespace ?? '' : '';
    const name = obj.metadata.name!;
    let space = t.byNs.get(ns);
    if (!space) t.byNs.set(ns, (space = new Map()));
    const previous = space.get(name);
    this.rv++;
    const stored: KubeObject = { ...obj, metadata: { ...obj.metadata, resourceVersion: String(this.rv) } };
    space.set(name, stored);
    if (!previous) t.count++;
    this.reindexOwners(def, ns, name, previous, stored);
    this.emit(t, previous ? { type: 'MODIFIED', rv: this.rv, object: stored, previous } : { type: 'ADDED', rv: this.rv, object: stored });
    return stored;
  }

  /** Removes an object; the DELETED event carries a fresh resourceVersion. */
  remove(def: ResourceDef, ns: string, name: string): KubeObject | undefined {
    const t = this.table(def);
    const space = t.byNs.get(def.namespaced ? ns : '');
    const previous = space?.get(name);
    if (!space || !previous) return undefined;
    space.delete(name);
    if (space.size === 0) t.byNs.delete(def.namespaced ? ns : '');
    t.count--;
    this.reindexOwners(def, ns, name, previous, undefined);
    this.rv++;
    const gone: KubeObject = { ...previous, metadata: { ...previous.metadata, resourceVersion: String(this.rv) } };
    this.emit(t, { type: 'DELETED', rv: this.rv, object: gone });
    return gone;
  }

  /** Keys (`def|ns|name`) of the objects that name `uid` as an owner. */
  dependentsOf(uid: string): { def: ResourceDef; ns: string; name: string }[] {
    const keys = this.owners.get(uid);
    if (!keys) return [];
    return [...keys].map((k) => {
      const [rk, ns, name] = k.split('|') as [string, string, string];
      return { def: this.tables.get(rk)!.def, ns, name };
    });
  }

  private reindexOwners(def: ResourceDef, ns: string, name: string, before: KubeObject | undefined, after: KubeObject | undefined): void {
    const key = refKey(def, ns, name);
    for (const ref of before?.metadata.ownerReferences ?? []) {
      const s = this.owners.get(ref.uid);
      s?.delete(key);
      if (s && s.size === 0) this.owners.delete(ref.uid);
    }
    for (const ref of after?.metadata.ownerReferences ?? []) {
      let s = this.owners.get(ref.uid);
      if (!s) this.owners.set(ref.uid, (s = new Set()));
      s.add(key);
    }
  }

  private emit(t: Table, ev: StoredEvent): void {
    t.events.push(ev);
    // Trim in batches so the log costs amortised O(1) per event.
    if (t.events.length > this.opts.eventWindow + Math.max(16, this.opts.eventWindow >> 2)) {
      const drop = t.events.length - this.opts.eventWindow;
      t.droppedThrough = t.events[drop - 1]!.rv;
      t.events.splice(0, drop);
    }
    for (const s of t.subscribers) deliver(s, ev);
    for (const l of this.listeners) l(t.def, ev);
  }

  /**
   * Replays the events after `sinceRv` to `sub` and subscribes it to new ones, or returns
   * 'expired' when events after `sinceRv` were already dropped from the log.
   */
  watchFrom(def: ResourceDef, sinceRv: number, sub: Subscriber): 'ok' | 'expired' {
    const t = this.table(def);
    if (sinceRv < t.droppedThrough) return 'expired';
    // Binary search for the first retained event newer than sinceRv.
    let lo = 0;
    let hi = t.events.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (t.events[mid]!.rv <= sinceRv) lo = mid + 1;
      else hi = mid;
    }
    for (let i = lo; i < t.events.length; i++) deliver(sub, t.events[i]!);
    t.subscribers.add(sub);
    return 'ok';
  }

  subscribe(def: ResourceDef, sub: Subscriber): void {
    this.table(def).subscribers.add(sub);
  }

  unsubscribe(def: ResourceDef, sub: Subscriber): void {
    this.table(def).subscribers.delete(sub);
  }

  /**
   * Drops every retained event, so a watch from a resourceVersion before the newest event of
   * its type gets 410 Gone. With `expireAll`, every resourceVersion issued so far expires
   * (the revision advances past them, as other writes in etcd would), so even a watcher that
   * was up to date must relist.
   */
  compact(expireAll = false): void {
    if (expireAll) this.rv++;
    for (const t of this.tables.values()) {
      if (expireAll) t.droppedThrough = this.rv;
      else if (t.events.length > 0) t.droppedThrough = t.events[t.events.length - 1]!.rv;
      t.events = [];
    }
  }

  closeWatchers(): Subscriber[] {
    const all: Subscriber[] = [];
    for (const t of this.tables.values()) {
      all.push(...t.subscribers);
      t.subscribers.clear();
    }
    return all;
  }
}

function deliver(s: Subscriber, ev: StoredEvent): void {
  const ns = ev.object.metadata.namespace;
  if (s.namespace !== undefined && ns !== s.namespace) return;
  const now = s.filter(ev.object);
  if (ev.type === 'MODIFIED' && ev.previous) {
    const before = s.filter(ev.previous);
    if (before && now) s.send('MODIFIED', ev.object);
    else if (before) s.send('DELETED', ev.object);
    else if (now) s.send('ADDED', ev.object);
    return;
  }
  if (now) s.send(ev.type, ev.object);
}

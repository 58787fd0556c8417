// Reflector: keeps an in-memory copy of one kind in one namespace (filtered by a label
// selector, and by `keep` for what a selector cannot say) in step with the API server, the way client-go's reflector does: list, then watch
// from the list's resourceVersion with bookmarks; on 410 Gone (the version expired) list again;
// on errors back off exponentially with jitter; and list again every `relistIntervalMs` even
// when the watch is healthy, so a missed event cannot leave the copy wrong for long.
// A relist diffs against the copy and emits deletes for objects that vanished meanwhile.
import type { KubernetesObject } from '@kubernetes/client-node';
import type { Logger } from '../log';
import { collectionPath, httpStatus, isKindUnavailable, type KubeClient } from './client';

export type ReflectorEvent = 'upsert' | 'delete';

export interface ReflectorOptions {
  api: KubeClient;
  apiVersion: string;
  kind: string;
  plural: string;
  namespace: string;
  /** Absent: every object of the kind in the namespace. */
  labelSelector?: string;
  /**
   * Objects it returns false for are treated as absent: not stored, and one that was stored and
   * stops passing is a delete (as an object leaving a label selector is). For a test no
   * selector can express, e.g. krane's ownership (src/kube/ownership.ts).
   */
  keep?(obj: KubernetesObject): boolean;
  /** E.g. `metadata.name=X`: lets RBAC grant list and watch of one named object only. */
  fieldSelector?: string;
  logger: Logger;
  relistIntervalMs: number;
  /** First retry delay after a failure; doubles per consecutive failure up to maxBackoffMs. */
  minBackoffMs?: number;
  maxBackoffMs?: number;
  /** `relist` is true for events produced by a full list rather than by the watch. */
  onEvent(type: ReflectorEvent, obj: KubernetesObject, relist: boolean): void;
  /** After every completed list (the copy is complete at this point). */
  onSynced?(): void;
}

/** Defaults: retry fast enough that a blip costs well under a second of status lag, cap at 30 s. */
const MIN_BACKOFF_MS = 200;
const MAX_BACKOFF_MS = 30_000;
/** A watch that ends this quickly without delivering anything counts as a failure for backoff. */
const SHORT_WATCH_MS = 1000;

const keyOf = (o: KubernetesObject) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`;

export class Reflector {
  readonly store = new Map<string, KubernetesObject>();
  private resourceVersion = '';
  private listedAt = -Infinity;
  private stopped = false;
  private running: Promise<void> | undefined;
  private currentWatch: AbortController | undefined;
  private wake: (() => void) | undefined;
  private synced = false;
  /** Lists performed, watches opened and 410s seen; for tests and metrics. */
  readonly counters = { lists: 0, watches: 0, gone: 0, errors: 0 };

  constructor(private readonly o: ReflectorOptions) {}

  start(): void {
    this.running ??= this.loop();
  }

  /** True while a watch connection is open. */
  get watching(): boolean {
    return this.currentWatch !== undefined;
  }

  get hasSynced(): boolean {
    return this.synced;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.currentWatch?.abort();
    this.wake?.();
    await this.running;
  }

  /** Drops the current watch; the loop reopens it from the last resourceVersion seen. */
  reconnect(): void {
    this.currentWatch?.abort();
  }

  /** Forces a relist at the next opportunity (aborts the current watch). */
  relistNow(): void {
    this.listedAt = -Infinity;
    this.currentWatch?.abort();
  }

  private async loop(): Promise<void> {
    let failures = 0;
    let needList = true;
    while (!this.stopped) {
      try {
        if (needList || Date.now() - this.listedAt >= this.o.relistIntervalMs) {
          await this.relist();
          needList = false;
        }
        const r = await this.watchOnce();
        if (r.gone) {
          this.counters.gone++;
          needList = true;
          failures = 0;
          continue;
        }
        if (r.short) failures++;
        else failures = 0;
      } catch (err) {
        if (this.stopped) break;
        this.counters.errors++;
        if (httpStatus(err) === 410) {
          this.counters.gone++;
          needList = true;
          continue;
        }
        if (isKindUnavailable(err)) {
          // Nothing of a kind the cluster does not serve can exist: count as listed (empty) and
          // look again at the next relist instead of retrying in a tight backoff loop.
          if (!this.synced) this.o.logger.warn({ kind: this.o.kind, namespace: this.o.namespace }, 'kind not served by the cluster, watching skipped until next relist');
          this.synced = true;
          this.listedAt = Date.now();
          needList = true;
          await this.sleep(this.o.relistIntervalMs);
          continue;
        }
        failures++;
        this.o.logger.warn({ err, kind: this.o.kind, namespace: this.o.namespace, failures }, 'reflector error, backing off');
      }
      if (failures > 0 && !this.stopped) await this.sleep(this.backoff(failures));
    }
  }

  private backoff(failures: number): number {
    const min = this.o.minBackoffMs ?? MIN_BACKOFF_MS;
    const max = this.o.maxBackoffMs ?? MAX_BACKOFF_MS;
    const base = Math.min(max, min * 2 ** (failures - 1));
    return base / 2 + Math.random() * (base / 2);
  }

  private sleep(ms: number): Promise<void> {
    return new Promise((resolve) => {
      const t = setTimeout(resolve, ms);
      this.wake = () => {
        clearTimeout(t);
        resolve();
      };
    });
  }

  private async relist(): Promise<void> {
    const started = Date.now();
    this.counters.lists++;
    const { items, resourceVersion } = await this.o.api.list(this.o.apiVersion, this.o.kind, this.o.namespace, this.o.labelSelector, this.o.fieldSelector);
    const seen = new Set<string>();
    for (const it of items) {
      if (this.o.keep && !this.o.keep(it)) continue;
      const key = keyOf(it);
      seen.add(key);
      this.store.set(key, it);
      this.o.onEvent('upsert', it, true);
    }
    for (const [key, old] of this.store) {
      if (!seen.has(key)) {
        this.store.delete(key);
        this.o.onEvent('delete', old, true);
      }
    }
    this.resourceVersion = resourceVersion;
    this.o.logger.debug({ kind: this.o.kind, namespace: this.o.namespace, items: items.length, resourceVersion }, 'reflector listed');
    this.listedAt = started;
    this.synced = true;
    this.o.onSynced?.();
  }

  private watchOnce(): Promise<{ gone: boolean; short: boolean }> {
    return new Promise((resolve, reject) => {
      const openedAt = Date.now();
      let delivered = false;
      let gone = false;
      let settled = false;
      let ctl: AbortController | undefined;
      const untilRelist = Math.max(0, this.listedAt + this.o.relistIntervalMs - Date.now());
      const relistTimer = setTimeout(() => ctl?.abort(), untilRelist);
      const finish = (err: unknown) => {
        if (settled) return;
        settled = true;
        clearTimeout(relistTimer);
        this.currentWatch = undefined;
        const aborted = ctl?.signal.aborted ?? false;
        this.o.logger.debug({ kind: this.o.kind, namespace: this.o.namespace, gone, delivered, aborted, err: (err as Error | undefined)?.message }, 'reflector watch ended');
        if (gone) return resolve({ gone: true, short: false });
        if (err && !aborted && !this.stopped) return reject(err);
        resolve({ gone: false, short: !aborted && !delivered && Date.now() - openedAt < SHORT_WATCH_MS });
      };
      const onEvent = (type: string, obj: any) => {
        if (settled) return;
        delivered = true;
        if (type === 'ERROR') {
          if (obj?.code === 410) gone = true;
          else this.o.logger.warn({ kind: this.o.kind, status: obj }, 'watch error event');
          ctl?.abort();
          return;
        }
        const rv = obj?.metadata?.resourceVersion;
        if (rv) this.resourceVersion = rv;
        if (type === 'BOOKMARK') return;
        const o = { ...obj, apiVersion: obj.apiVersion ?? this.o.apiVersion, kind: obj.kind ?? this.o.kind } as KubernetesObject;
        const key = keyOf(o);
        if (type === 'DELETED' || (this.o.keep && !this.o.keep(o))) {
          const had = this.store.delete(key);
          if (type === 'DELETED' || had) this.o.onEvent('delete', o, false);
        } else {
          this.store.set(key, o);
          this.o.onEvent('upsert', o, false);
        }
      };
      this.counters.watches++;
      this.o.api
        .watch(
          collectionPath(this.o.apiVersion, this.o.plural, this.o.namespace),
          {
            ...(this.o.labelSelector ? { labelSelector: this.o.labelSelector } : {}),
            ...(this.o.fieldSelector ? { fieldSelector: this.o.fieldSelector } : {}),
            resourceVersion: this.resourceVersion,
            allowWatchBookmarks: true,
            // The server ends the watch by then; the loop reopens it from the last version.
            timeoutSeconds: Math.max(1, Math.ceil(untilRelist / 1000)),
          },
          onEvent,
          finish,
        )
        .then((c) => {
          ctl = c;
          this.currentWatch = c;
          if (this.stopped || settled) c.abort();
        }, finish);
    });
  }
}

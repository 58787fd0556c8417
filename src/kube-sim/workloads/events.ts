// core/v1 Events written by the simulated components (scheduler, kubelet, controllers), so
// `kubectl describe` and `kubectl get events` show a pod's life. Events are ordinary stored
// objects (list and watch see them) written straight to the store: the recorder builds them
// complete, and skipping schema validation keeps a thousand-pod sync cheap.
//
// Like the kubelet's recorder, a repeat of the same event (same object, reason, message and
// source) bumps `count` and `lastTimestamp` instead of adding another. The number kept is
// bounded: past the limit the oldest is deleted, as the API server's TTL would.
import { randomUUID } from 'node:crypto';
import type { ObjectStore } from '../object-store';
import { mustResourceForKind } from '../resources';
import type { KubeObject } from '../types';
import { nowIso } from './util';

const EVENT = mustResourceForKind('v1', 'Event');
const NAMESPACE = mustResourceForKind('v1', 'Namespace');

export type EventType = 'Normal' | 'Warning';

export interface EventSource {
  component: string;
  host?: string;
}

export class EventRecorder {
  /** Event name by aggregation key, oldest first (Map keeps insertion order). */
  private readonly byKey = new Map<string, { ns: string; name: string }>();
  private seq = 0;

  constructor(
    private readonly store: ObjectStore,
    private readonly limit: number,
  ) {}

  record(involved: KubeObject, type: EventType, reason: string, message: string, source: EventSource, fieldPath?: string): void {
    const ns = involved.metadata.namespace ?? 'default';
    const namespace = this.store.get(NAMESPACE, '', ns);
    if (!namespace || namespace.metadata.deletionTimestamp) return;
    const now = nowIso();
    const key = `${involved.metadata.uid}|${reason}|${message}|${source.component}|${fieldPath ?? ''}`;
    const known = this.byKey.get(key);
    const existing = known ? this.store.get(EVENT, known.ns, known.name) : undefined;
    if (existing) {
      this.store.put(EVENT, { ...existing, count: (existing.count ?? 1) + 1, lastTimestamp: now });
      // Move to the end: a repeated event is the newest, not the oldest.
      this.byKey.delete(key);
      this.byKey.set(key, known!);
      return;
    }
    // The recorder names events <object>.<unique hex>, like client-go's.
    const name = `${involved.metadata.name}.${(Date.now() * 1000 + (this.seq++ % 1000)).toString(16)}`;
    this.store.put(EVENT, {
      apiVersion: 'v1',
      kind: 'Event',
      metadata: { name, namespace: ns, uid: randomUUID(), creationTimestamp: now },
      involvedObject: {
        kind: involved.kind,
        namespace: ns,
        name: involved.metadata.name,
        uid: involved.metadata.uid,
        apiVersion: involved.apiVersion,
        resourceVersion: involved.metadata.resourceVersion,
        ...(fieldPath ? { fieldPath } : {}),
      },
      reason,
      message,
      source: { component: source.component, ...(source.host ? { host: source.host } : {}) },
      firstTimestamp: now,
      lastTimestamp: now,
      count: 1,
      type,
      eventTime: null,
      reportingComponent: source.component,
      reportingInstance: source.host ?? '',
    });
    this.byKey.set(key, { ns, name });
    this.trim();
  }

  private trim(): void {
    while (this.byKey.size > this.limit) {
      const [key, ref] = this.byKey.entries().next().value as [string, { ns: string; name: string }];
      this.byKey.delete(key);
      this.store.remove(EVENT, ref.ns, ref.name);
    }
  }
}

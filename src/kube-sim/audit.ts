// The deletion audit log for chaos harnesses: every deletion the simulator carried out or
// accepted (API requests, collection deletes, namespace teardown, garbage-collector cascades,
// the built-in controllers' own pod deletions), with who asked when known. Bounded: past the
// limit the oldest entries go and `dropped` counts them, so a long run cannot grow it forever.
import type { KubeObject } from './types';

/** Why an object went: the request itself, or the machinery acting on one. */
export type DeletionCause = 'request' | 'collection' | 'namespace' | 'cascade' | 'controller';

/** Who asked for a deletion, as far as the simulator can tell. */
export interface Actor {
  cause: DeletionCause;
  /** The request's User-Agent header. */
  userAgent?: string;
  /** fieldManager query parameter, or the built-in controller's manager name. */
  manager?: string;
  /** For cascades: the owner whose deletion took this object along. */
  owner?: { kind: string; name: string; uid: string };
}

export interface DeletionEntry extends Omit<Actor, 'cause'> {
  seq: number;
  time: string;
  cause: DeletionCause;
  apiVersion: string;
  kind: string;
  namespace?: string;
  name: string;
  uid?: string;
  labels: Record<string, string>;
  propagationPolicy?: string;
  /** True when finalizers hold the object: it was marked for deletion, not removed yet. */
  held?: boolean;
}

export class DeletionAudit {
  private entries: DeletionEntry[] = [];
  private seq = 0;
  private droppedCount = 0;

  constructor(private readonly limit: number) {}

  record(obj: KubeObject, actor: Actor, extra: { propagationPolicy?: string; held?: boolean } = {}): void {
    this.entries.push({
      seq: ++this.seq,
      time: new Date().toISOString(),
      ...actor,
      apiVersion: obj.apiVersion,
      kind: obj.kind,
      ...(obj.metadata.namespace ? { namespace: obj.metadata.namespace } : {}),
      name: obj.metadata.name ?? '',
      uid: obj.metadata.uid,
      labels: { ...(obj.metadata.labels ?? {}) },
      ...(extra.propagationPolicy ? { propagationPolicy: extra.propagationPolicy } : {}),
      ...(extra.held ? { held: true } : {}),
    });
    // Trim in batches so the log costs amortised O(1) per entry.
    if (this.entries.length > this.limit + Math.max(16, this.limit >> 3)) {
      const drop = this.entries.length - this.limit;
      this.entries.splice(0, drop);
      this.droppedCount += drop;
    }
  }

  /** Entries after `sinceSeq` (all when 0), oldest first. */
  list(sinceSeq = 0): { entries: DeletionEntry[]; dropped: number; lastSeq: number } {
    const entries = sinceSeq > 0 ? this.entries.filter((e) => e.seq > sinceSeq) : [...this.entries];
    return { entries, dropped: this.droppedCount, lastSeq: this.seq };
  }

  /** Empties the log; sequence numbers keep counting so a reader's cursor stays meaningful. */
  reset(): number {
    const n = this.entries.length;
    this.entries = [];
    this.droppedCount = 0;
    return n;
  }
}

// Where krane's observers put what they learn. The reporter (src/sync/reporter.ts, krane's side)
// implements it; tests use a recording sink. Calls must not block: a sink buffers, keeping the
// latest state per key (pod, sentinel, resource, region).
import type { ApplyReport, GcStatus, InstanceRef, InstanceReport, SentinelStatus } from './protocol';

export interface StatusSink {
  instance(r: InstanceReport): void;
  /** Every deployment pod of the region after a full list; the latest set replaces an unsent one. */
  instanceSet?(pods: InstanceRef[]): void;
  sentinel(s: SentinelStatus): void;
  /** The latest outcome of applying or deleting one resource (failed, or succeeded again). */
  apply(r: ApplyReport): void;
  /** The GC brake's state after a GC pass. */
  gc(s: GcStatus): void;
}

// Where status watchers put what they observe. The reporter (src/sync/reporter.ts, krane's side) implements
// it; tests use a recording sink. Calls must not block: a sink buffers.
import type { ApplyFailure, InstanceReport, SentinelStatus } from './protocol';

export interface StatusSink {
  instance(r: InstanceReport): void;
  sentinel(s: SentinelStatus): void;
  failure(f: ApplyFailure): void;
}

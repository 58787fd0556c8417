// ApplyOutcomes: turns what happened to each resource into apply reports on the status sink.
// A permanent refusal is reported as that resource's failure (code and reason); the next apply
// or delete that goes through reports `succeeded`, which clears it at ctrl. Successes are
// reported only when they can clear something (a failure reported by this process, or an apply
// that had to write, which covers failures reported before a restart), so a periodic full sync
// of unchanged resources sends nothing. Per-resource order is the sink's to keep. A report
// made inside an apply span (the change was traced) carries that span's traceparent, so ctrl's
// handling of it links back to the apply.
import type { PermanentError, ResourceRef, StatusSink } from '../sync/wire';
import { refKey } from '../sync/wire';
import { currentTraceparent } from '../tracing';

const traced = (): { traceparent?: string } => {
  const tp = currentTraceparent();
  return tp ? { traceparent: tp } : {};
};

/** Failure reasons are capped by the protocol (ApplyReport.reason). */
const MAX_REASON = 2048;
/** For refusals that carry no code of their own. */
const FALLBACK_CODE = 'ERR_KUBE_REJECTED';

export class ApplyOutcomes {
  /** Resources whose latest outcome reported by this process is a failure, with what was said. */
  private readonly failed = new Map<string, string>();

  constructor(private readonly sink: StatusSink) {}

  /** Reported once: the same failure again (a resync, a retry) is already known to ctrl. */
  failedPermanently(ref: ResourceRef, err: PermanentError): void {
    const code = err.code && /^ERR_[A-Z_]+$/.test(err.code) ? err.code : FALLBACK_CODE;
    const reason = (err.message || code).slice(0, MAX_REASON);
    const key = refKey(ref);
    if (this.failed.get(key) === `${code} ${reason}`) return;
    this.failed.set(key, `${code} ${reason}`);
    this.sink.apply({ resource: ref, outcome: 'failed', code, reason, ...traced() });
  }

  /** After a successful apply; `wrote`: some object had to be sent. */
  applied(ref: ResourceRef, wrote: boolean): void {
    if (this.failed.delete(refKey(ref)) || wrote) this.sink.apply({ resource: ref, outcome: 'succeeded', ...traced() });
  }

  /** An object of the resource was deleted and created again; ctrl hears why. */
  recreated(ref: ResourceRef, why: string): void {
    this.failed.delete(refKey(ref));
    this.sink.apply({ resource: ref, outcome: 'succeeded', recreated: why.slice(0, MAX_REASON), ...traced() });
  }

  /** After a successful delete: the resource is gone, and so is any failure about it. */
  deleted(ref: ResourceRef): void {
    this.failed.delete(refKey(ref));
    this.sink.apply({ resource: ref, outcome: 'succeeded', ...traced() });
  }
}

// Resources waiting for a kind the cluster does not serve yet (the Cilium CRD on a cluster
// without Cilium). Their other objects are applied; the failure is reported once (as that
// resource's failure, with the reason); then they are tried again at a low rate, and the one
// that succeeds clears its failure. So installing the CRD later heals the region within
// KIND_RETRY_MS, without a hot loop in between and without waiting for the next full resync.
import type { ApplyState, ResourceRef } from '../sync/wire';

/**
 * Installing a CRD is an operator's deliberate act; half a minute to notice it is quick enough,
 * and one discovery request per parked resource per half minute costs the API server nothing.
 */
export const KIND_RETRY_MS = 30_000;

export class KindWait {
  private readonly parked = new Map<string, { ref: ResourceRef; state: ApplyState }>();
  private timer: NodeJS.Timeout | undefined;
  /** Retry rounds run (tests and metrics): evidence of the rate, not a hot loop. */
  rounds = 0;

  constructor(
    private readonly retry: (ref: ResourceRef, state: ApplyState) => Promise<void>,
    private readonly intervalMs = KIND_RETRY_MS,
  ) {}

  park(key: string, ref: ResourceRef, state: ApplyState): void {
    this.parked.set(key, { ref, state });
    this.timer ??= setTimeout(() => void this.round(), this.intervalMs);
    this.timer.unref();
  }

  /** The resource applied, or is no longer wanted: nothing to retry. */
  unpark(key: string): void {
    this.parked.delete(key);
  }

  get size(): number {
    return this.parked.size;
  }

  close(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    this.parked.clear();
  }

  private async round(): Promise<void> {
    this.timer = undefined;
    this.rounds++;
    // One at a time: all of them wait for the same kind, and the first answer says it for all.
    for (const [, p] of [...this.parked]) await this.retry(p.ref, p.state).catch(() => {});
    if (this.parked.size > 0 && !this.timer) {
      this.timer = setTimeout(() => void this.round(), this.intervalMs);
      this.timer.unref();
    }
  }
}

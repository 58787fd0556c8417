// The seam between the change-feed watcher (which knows the stream) and the Kubernetes side
// (which knows manifests and the API server). The watcher calls one ResourceController for
// every resource type; implementations dispatch by `ref.type` / `state.kind`.
import type { ApplyState, ResourceRef } from './protocol';

/**
 * Thrown by a controller when retrying cannot help this object (the API server refused it as
 * invalid, forbidden by quota or admission, or too large). The watcher reports it to ctrl as
 * that resource's failure, with `code` and the message, and moves past the event; any other
 * error is transient: the watcher retries and holds its cursor.
 */
export class PermanentError extends Error {
  constructor(
    message: string,
    options?: { cause?: unknown },
    /** ERR_<AREA>_<WHAT> naming the kind of refusal, reported with the failure. */
    readonly code?: string,
  ) {
    super(message, options);
    this.name = 'PermanentError';
  }
}

/**
 * Thrown by a controller for a failure that waiting can fix (conflict, throttling, an API
 * server in trouble). `retryAfterMs` is how long the other side asked to wait (a 429's
 * Retry-After); the dispatcher waits at least that long before trying again.
 */
export class RetryLaterError extends Error {
  constructor(
    message: string,
    readonly retryAfterMs?: number,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'RetryLaterError';
  }
}

export interface ResourceController {
  /** Makes the cluster match `state`. Idempotent: applying the same state twice writes nothing new. */
  apply(ref: ResourceRef, state: ApplyState): Promise<void>;
  /** Removes the resource's objects; succeeds when they are already gone. */
  delete(ref: ResourceRef): Promise<void>;
  /**
   * Called after a complete full snapshot, and only then, with refKey(…) of every resource the
   * snapshot asked to apply. Deletes managed objects of the agent's region whose resource is not
   * in the set, unless the pass would delete too much at once (the GC brake holds it until an
   * operator confirms). Never touches objects without the managed-by label.
   */
  gc(desired: ReadonlySet<string>): Promise<void>;
}

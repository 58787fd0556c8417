// The seam between the change-feed watcher (which knows the stream) and the Kubernetes side
// (which knows manifests and the API server). The watcher calls one ResourceController for
// every resource type; implementations dispatch by `ref.type` / `state.kind`.
import type { ApplyState, ResourceRef } from './protocol';

/**
 * Thrown by a controller when retrying cannot help (the API server rejected the object as
 * invalid, 422). The watcher reports it to ctrl as a failed status and moves past the event;
 * any other error is transient: the watcher retries and holds its cursor.
 */
export class PermanentError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'PermanentError';
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
   * in the set. Never touches objects without the managed-by label.
   */
  gc(desired: ReadonlySet<string>): Promise<void>;
}

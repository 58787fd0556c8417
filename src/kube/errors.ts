// The errors krane's Kubernetes side raises, each with a code from src/errors.ts. A permanent
// one (KubeApplyError) is what the dispatcher reports as that resource's failure before moving
// on; a KubeRetryError makes it wait (at least a 429's Retry-After) and try again.
import { PermanentError, RetryLaterError } from '../sync/wire';
import { classifyApiFailure, type PermanentCode, type RetryCode } from './classify';
import { apiFailure, isKindUnavailable, type ObjectRef } from './client';

export type KubeApplyCode =
  | PermanentCode
  | 'ERR_KUBE_UNMANAGED_CONFLICT'
  | 'ERR_KUBE_WRONG_REGION'
  | 'ERR_KUBE_WRONG_NAMESPACE'
  | 'ERR_KUBE_KIND_UNAVAILABLE';

/** Coded permanent failure: the cluster will not accept this desired state as it is. */
export class KubeApplyError extends PermanentError {
  constructor(
    override readonly code: KubeApplyCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options, code);
    this.name = 'KubeApplyError';
  }
}

/** Coded transient failure: the same request can succeed later. */
export class KubeRetryError extends RetryLaterError {
  constructor(
    readonly code: RetryCode,
    message: string,
    retryAfterMs?: number,
    options?: { cause?: unknown },
  ) {
    super(message, retryAfterMs, options);
    this.name = 'KubeRetryError';
  }
}

/**
 * Turns a failed API call about object `o` (or a named call, such as the inventory's list) into a coded error, permanent or retryable as
 * src/kube/classify.ts decides. A kind the cluster does not serve at all (no CRD) is the
 * client's own finding, not an answer, and permanent.
 */
export function kubeError(err: unknown, o: ObjectRef | string): KubeApplyError | KubeRetryError {
  if (err instanceof KubeApplyError || err instanceof KubeRetryError) return err;
  if (isKindUnavailable(err) && typeof o !== 'string') {
    return new KubeApplyError('ERR_KUBE_KIND_UNAVAILABLE', `the cluster does not serve ${o.apiVersion} ${o.kind} (CRD not installed?)`, { cause: err });
  }
  const what = typeof o === 'string' ? o : `${o.kind} ${o.namespace}/${o.name}`;
  const f = apiFailure(err);
  const v = classifyApiFailure(f);
  const status = f.status === undefined ? 'no answer' : String(f.status);
  if (v.kind === 'permanent') return new KubeApplyError(v.code, `${what} refused (${status}): ${f.message}`, { cause: err });
  return new KubeRetryError(v.code, `${what} failed (${status}): ${f.message}`, v.retryAfterMs, { cause: err });
}

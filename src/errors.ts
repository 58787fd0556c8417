// The one error registry. Every code the system raises is a row here (ERR_<AREA>_<WHAT>), with
// the HTTP status the API answers with and whether trying again later can succeed. Errors carry
// only their code; nothing else decides a status. The fastify error handler reads this table
// for every error that reaches it (an AppError, a workflow's TerminalError surfacing through
// engine.call, anything with a registered `code`), so a route cannot forget to map one, and a
// test checks that every ERR_ literal in src/ is registered.
//
// `status: null` marks codes that never travel over HTTP (the client commands' own failures,
// krane's apply failures that it reports as data).

export interface ErrorSpec {
  /** HTTP status the API answers with, or null for codes that never reach HTTP. */
  status: number | null;
  /** True when the same request can succeed later without changing it (outage, contention). */
  retryable: boolean;
}

const E = (status: number | null, retryable = false): ErrorSpec => ({ status, retryable });

const REGISTRY = {
  // Requests
  ERR_VALIDATION_INVALID: E(400),
  ERR_REQUEST_INVALID: E(400),
  ERR_NOT_FOUND: E(404),
  ERR_INTERNAL: E(500),
  /** The database is unreachable or restarting (src/store/retryable.ts): try again shortly. */
  ERR_DATABASE_UNAVAILABLE: E(503, true),
  ERR_AUTH_UNAUTHORIZED: E(401),
  ERR_AUTH_FORBIDDEN: E(403),
  /** An Idempotency-Key sent again with another request (src/http/idempotency.ts). */
  ERR_IDEMPOTENCY_KEY_REUSED: E(422),

  // Deployments (commands and the deploy workflow)
  ERR_DEPLOYMENT_NOT_READY: E(409),
  ERR_DEPLOYMENT_NO_IMAGE: E(409),
  ERR_DEPLOYMENT_STATE_CONFLICT: E(409),
  ERR_DEPLOY_NOT_FOUND: E(404),
  ERR_DEPLOY_ENVIRONMENT: E(422),
  ERR_DEPLOY_INSTANCES_FAILED: E(422),
  ERR_DEPLOY_SENTINEL: E(422),
  ERR_DEPLOY_STOPPED: E(409),
  ERR_DEPLOY_TIMEOUT: E(504, true),
  ERR_DEPLOY_REGION_OFFLINE: E(503, true),
  /** A promote while a region the deployment runs in is offline (issue 33): retried once it is back. */
  ERR_PROMOTE_REGION_OFFLINE: E(409, true),
  ERR_REGION_UNKNOWN: E(400),
  // Versions, quarantine and feature flags (issue 25)
  ERR_DEPLOYMENT_VERSION_TAKEN: E(409),
  ERR_IMAGE_QUARANTINED: E(409),
  ERR_FEATURE_DISABLED: E(403),
  ERR_DEPLOY_NO_REGIONS: E(400),
  /** A build stopped by an operator's abort (build-step.ts answers { aborted: true }): never HTTP. */
  ERR_BUILD_ABORTED: E(null),

  // Sentinels and fleet rollouts
  ERR_SENTINEL_NOT_FOUND: E(404),
  ERR_ROLLOUT_IN_PROGRESS: E(409),
  ERR_ROLLOUT_STATE: E(409),

  // The change feed
  ERR_FEED_CURSOR_INVALID: E(400),
  ERR_FEED_CURSOR_EXPIRED: E(410),
  ERR_FEED_UNAVAILABLE: E(503, true),
  ERR_FEED_SYNC_BUSY: E(503, true),
  ERR_FEED_TOO_MANY_STREAMS: E(429, true),
  /** One credential holds EVENT_SOCKETS_PER_TOKEN live event sockets already (src/http/api/events.ts). */
  ERR_EVENTS_TOO_MANY_SOCKETS: E(429, true),

  // The web view: served only once built (a source tree that was never built answers 503);
  // the page's own failures (ctrl unreachable, no token typed) never travel over HTTP.
  ERR_WEB_NOT_BUILT: E(503),
  ERR_WEB_UNREACHABLE: E(null, true),
  ERR_WEB_NO_TOKEN: E(null),

  // The workflow engine
  ERR_ENGINE_INPUT_INVALID: E(400),
  ERR_ENGINE_OUTPUT_INVALID: E(500),
  ERR_ENGINE_KEY_REQUIRED: E(400),
  ERR_ENGINE_UNKNOWN_TARGET: E(404),
  ERR_ENGINE_AWAKEABLE_INVALID: E(400),
  ERR_ENGINE_AWAKEABLE_NOT_FOUND: E(404),
  ERR_ENGINE_AWAKEABLE_REJECTED: E(422),
  ERR_ENGINE_NOT_STARTED: E(503, true),
  ERR_ENGINE_STOPPED: E(503, true),
  ERR_ENGINE_TERMINAL: E(500),
  ERR_ENGINE_FAILED: E(500),
  ERR_ENGINE_STEP_FAILED: E(500),
  ERR_ENGINE_CANCELLED: E(409),
  ERR_ENGINE_TIMEOUT: E(504, true),
  ERR_ENGINE_NON_DETERMINISM: E(500),
  ERR_ENGINE_NO_STATE: E(500),
  ERR_ENGINE_STATE_READONLY: E(500),
  ERR_ENGINE_STATE_UNDEFINED: E(500),

  // Outbound requests (Slack webhooks), at send time: a destination the policy refuses, and an
  // answer that will not change on a retry (a redirect, a 4xx)
  ERR_OUTBOUND_REFUSED: E(null),
  ERR_OUTBOUND_FAILED: E(null),

  // krane's apply failures: reported to ctrl as data on the resource, never an HTTP answer
  ERR_KUBE_INVALID: E(null),
  ERR_KUBE_UNMANAGED_CONFLICT: E(null),
  ERR_KUBE_WRONG_REGION: E(null),
  ERR_KUBE_WRONG_NAMESPACE: E(null),
  ERR_KUBE_KIND_UNAVAILABLE: E(null),
  ERR_KUBE_NAMESPACE_MISSING: E(null),
  ERR_KUBE_FORBIDDEN: E(null),
  ERR_KUBE_TOO_LARGE: E(null),
  ERR_KUBE_REJECTED: E(null),
  ERR_KUBE_CONFLICT: E(null, true),
  ERR_KUBE_THROTTLED: E(null, true),
  ERR_KUBE_UNAVAILABLE: E(null, true),
  ERR_KUBE_UNAUTHORIZED: E(null, true),
  ERR_KUBE_NAMESPACE_TERMINATING: E(null, true),
  /** raiseReplicas asked to scale a kind with no scale subresource it knows (a caller's bug). */
  ERR_KUBE_SCALE_UNSUPPORTED: E(null),

  // The client commands (they print these; exit codes live in src/cli/errors.ts)
  ERR_CLI_API: E(null),
  ERR_CLI_USAGE: E(null),
  ERR_CLI_BAD_API_URL: E(null),
  ERR_CLI_BAD_RESPONSE: E(null),
  ERR_CLI_DEV_FILE: E(null),
  ERR_CLI_NO_API: E(null),
  ERR_CLI_NO_TOKEN: E(null),
  ERR_CLI_UNREACHABLE: E(null, true),
  ERR_CLI_CTRL_LOST: E(null, true),
  ERR_CLI_DEPLOY_FAILED: E(null),
  ERR_CLI_DEPLOY_STOPPED: E(null),
  ERR_CLI_WAIT_TIMEOUT: E(null, true),
  /** A non-2xx answer whose body carried no code of ours (a proxy in between, say). */
  ERR_UNKNOWN: E(null),

  // Tenants, keys and the audit trail (issue 26)
  /** A key without the permission a route needs (the message and details name it). */
  ERR_FORBIDDEN: E(403),
  /** A key past its request rate (Retry-After says when to come back). */
  ERR_RATE_LIMITED: E(429, true),
  /** A slug or hostname already taken by a live environment. */
  ERR_TENANCY_CONFLICT: E(409),
  /** A deletion refused while something still runs in what it would delete. */
  ERR_TENANCY_BUSY: E(409),
  /** A hostname another environment (or the platform) owns (issue 32): never re-pointed. */
  ERR_HOSTNAME_TAKEN: E(409),
  /** A workspace at one of its caps (live keys): free one first. */
  ERR_TENANCY_LIMIT: E(409),
} satisfies Record<`ERR_${string}`, ErrorSpec>;

export type ErrorCode = keyof typeof REGISTRY;

export const ERRORS: Readonly<Record<ErrorCode, ErrorSpec>> = REGISTRY;

export function isErrorCode(code: unknown): code is ErrorCode {
  return typeof code === 'string' && Object.hasOwn(REGISTRY, code);
}

/** The registry row of an error's `code`, when it has a registered one. */
export function specOf(err: unknown): (ErrorSpec & { code: ErrorCode }) | undefined {
  const code = (err as { code?: unknown } | null)?.code;
  return isErrorCode(code) ? { code, ...REGISTRY[code] } : undefined;
}

export interface ErrorDetail {
  /** Dotted path of the offending field, e.g. `regions.0` or `--database-url`. */
  field: string;
  message: string;
}

/** An error of ours: a registered code, a message for people, and per-field details. It says
 *  nothing about transport; the registry decides what the API answers. */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly details: ErrorDetail[];

  constructor(code: ErrorCode, message: string, opts: { details?: ErrorDetail[]; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'AppError';
    this.code = code;
    this.details = opts.details ?? [];
  }

  /** The status the registry gives this code (500 for codes that never reach HTTP). Derived,
   *  not stored: the raiser does not choose it. */
  get status(): number {
    return REGISTRY[this.code].status ?? 500;
  }

  toJSON(): { code: string; message: string; details: ErrorDetail[] } {
    return { code: this.code, message: this.message, details: this.details };
  }
}

export const validationError = (message: string, details: ErrorDetail[]) => new AppError('ERR_VALIDATION_INVALID', message, { details });

export const notFound = (what: string, id: string) => new AppError('ERR_NOT_FOUND', `${what} ${id} not found`);

export const unauthorized = (message = 'missing or invalid bearer token') => new AppError('ERR_AUTH_UNAUTHORIZED', message);

export const forbidden = (message: string) => new AppError('ERR_AUTH_FORBIDDEN', message);

/** Turns zod issues into the `details` list every 400 carries. */
export function issuesToDetails(
  issues: ReadonlyArray<{ path: ReadonlyArray<PropertyKey>; message: string; code?: string; keys?: readonly string[] }>,
  prefix = '',
): ErrorDetail[] {
  const name = (path: ReadonlyArray<PropertyKey>) => prefix + (path.length ? path.map(String).join('.') : '(root)');
  // An unknown key is reported at its parent; name the key itself, which is what the user typed.
  return issues.flatMap((i) =>
    i.code === 'unrecognized_keys' && i.keys?.length
      ? i.keys.map((k) => ({ field: name([...i.path, k]), message: 'unknown field' }))
      : [{ field: name(i.path), message: i.message }],
  );
}

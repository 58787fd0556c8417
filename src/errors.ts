// Coded errors shared by every part. A code names the area and the failure
// (ERR_<AREA>_<WHAT>) and carries the HTTP status the API answers with, so the one fastify
// error handler maps any of them without knowing where they came from.

export interface ErrorDetail {
  /** Dotted path of the offending field, e.g. `regions.0` or `--database-url`. */
  field: string;
  message: string;
}

export class AppError extends Error {
  readonly code: string;
  readonly status: number;
  readonly details: ErrorDetail[];

  constructor(code: string, status: number, message: string, opts: { details?: ErrorDetail[]; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'AppError';
    this.code = code;
    this.status = status;
    this.details = opts.details ?? [];
  }

  toJSON(): { code: string; message: string; details: ErrorDetail[] } {
    return { code: this.code, message: this.message, details: this.details };
  }
}

export const validationError = (message: string, details: ErrorDetail[]) =>
  new AppError('ERR_VALIDATION_INVALID', 400, message, { details });

export const notFound = (what: string, id: string) =>
  new AppError('ERR_NOT_FOUND', 404, `${what} ${id} not found`);

export const conflict = (code: string, message: string) => new AppError(code, 409, message);

export const unauthorized = (message = 'missing or invalid bearer token') =>
  new AppError('ERR_AUTH_UNAUTHORIZED', 401, message);

export const forbidden = (message: string) => new AppError('ERR_AUTH_FORBIDDEN', 403, message);

export const unavailable = (code: string, message: string, cause?: unknown) =>
  new AppError(code, 503, message, { cause });

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

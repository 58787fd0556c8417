// Errors a handler sees and the engine records. A failure is stored in the journal and on the
// invocation as plain JSON ({ name, message, code }) and rebuilt into the same class on replay
// and for callers, so `instanceof TerminalError` holds wherever the failure surfaces.
import type { z } from 'zod';
import { AppError, issuesToDetails } from '../../errors';

/** A final failure: ctx.run stops retrying, and a handler that throws it fails for good. */
export class TerminalError extends Error {
  readonly code: string;
  constructor(message: string, opts: { code?: string; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'TerminalError';
    this.code = opts.code ?? 'ERR_ENGINE_TERMINAL';
  }
}

/** `value` checked against `schema`: the parsed value, or a TerminalError naming every field
 *  (a call or a result of the wrong shape is a bug, so retrying cannot help). */
export function checkShape<T>(schema: z.ZodType<T>, value: unknown, what: string, code: string): T {
  const r = schema.safeParse(value);
  if (r.success) return r.data;
  const details = issuesToDetails(r.error.issues);
  throw new TerminalError(`${what}: ${details.map((d) => `${d.field}: ${d.message}`).join('; ')}`, { code });
}

/** Raised at the next suspension point of a cancelled invocation, so its finally blocks run. */
export class CancelledError extends TerminalError {
  constructor(message = 'invocation cancelled') {
    super(message, { code: 'ERR_ENGINE_CANCELLED' });
    this.name = 'CancelledError';
  }
}

/** Raised by orTimeout when the timer wins. */
export class TimeoutError extends TerminalError {
  constructor(message = 'timed out') {
    super(message, { code: 'ERR_ENGINE_TIMEOUT' });
    this.name = 'TimeoutError';
  }
}

/** The handler asked for a different step than the journal holds at that position. */
export class NonDeterminismError extends TerminalError {
  constructor(message: string) {
    super(message, { code: 'ERR_ENGINE_NON_DETERMINISM' });
    this.name = 'NonDeterminismError';
  }
}

/** This process no longer owns the invocation (lease expired and another took it, or stop). */
export class LeaseLostError extends Error {
  constructor(invocationId: string) {
    super(`lease lost on invocation ${invocationId}`);
    this.name = 'LeaseLostError';
  }
}

export interface StoredFailure {
  name: string;
  message: string;
  code: string;
}

export function toFailure(err: unknown): StoredFailure {
  if (err instanceof TerminalError) return { name: err.name, message: err.message, code: err.code };
  if (err instanceof AppError) return { name: 'TerminalError', message: err.message, code: err.code };
  if (err instanceof Error) return { name: 'TerminalError', message: err.message, code: 'ERR_ENGINE_STEP_FAILED' };
  return { name: 'TerminalError', message: String(err), code: 'ERR_ENGINE_STEP_FAILED' };
}

export function fromFailure(f: StoredFailure): TerminalError {
  switch (f.name) {
    case 'CancelledError':
      return new CancelledError(f.message);
    case 'TimeoutError':
      return new TimeoutError(f.message);
    case 'NonDeterminismError':
      return new NonDeterminismError(f.message);
    default:
      return new TerminalError(f.message, { code: f.code });
  }
}

export const invalidInput = (what: string, details: { field: string; message: string }[]) =>
  new AppError('ERR_ENGINE_INPUT_INVALID', `invalid input for ${what}`, { details });

export const unknownTarget = (what: string) => new AppError('ERR_ENGINE_UNKNOWN_TARGET', `no handler ${what}`);

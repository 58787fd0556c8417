// The one fastify error handler. Any error with a registered code (an AppError, a workflow's
// TerminalError surfacing through engine.call) answers with the status the registry in
// src/errors.ts gives it; fastify's own validation and parse errors become 400s; anything else
// is a 500 that never leaks internals to the client.
//
// What it logs is a fixed set of fields (failureFields), never the error's message or the
// request: a database error's message, `detail` and `where` quote the values that failed (a
// deployment's whole env, secrets included, for a bad jsonb), and a request's content is the
// caller's. The code, the SQLSTATE, the route and the request id (on every line of req.log)
// find the request and the statement; the stack's frames, without its message, find the code.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, specOf, type ErrorDetail } from '../errors';
import { isRetryableDbError } from '../store/retryable';

/** Seconds a client should wait before retrying a retryable failure (an outage, a restart). */
const RETRY_AFTER_S = 1;

const SQLSTATE = /^[0-9A-Z]{5}$/;

/** The log fields of a failure: nothing a caller sent and nothing a database error quotes. */
export function failureFields(err: unknown, req: FastifyRequest): Record<string, unknown> {
  const chain: unknown[] = [];
  for (let e = err, depth = 0; e instanceof Error && depth < 5; e = (e as { cause?: unknown }).cause, depth++) chain.push(e);
  const codes = chain.map((e) => (e as { code?: unknown }).code).filter((c): c is string => typeof c === 'string');
  const top = err instanceof Error ? err : undefined;
  return {
    route: req.routeOptions.url ?? null,
    method: req.method,
    errorClass: top?.constructor.name ?? typeof err,
    code: codes.find((c) => !SQLSTATE.test(c)) ?? null,
    sqlstate: codes.find((c) => SQLSTATE.test(c)) ?? null,
    // Frames only: the first lines of a stack are its message.
    frames: (chain.at(-1) as Error | undefined)?.stack?.split('\n').filter((l) => /^\s+at /.test(l)).slice(0, 8).join('\n') ?? null,
  };
}

/**
 * The client went away: its socket reset or closed before the request was read (fastify marks
 * a failed body read with a 4xx statusCode). Its ECONNRESET or ECONNABORTED is the client's
 * connection, not the database's, whatever retryable.ts would say of the code alone.
 */
function clientGone(err: FastifyError | Error, req: FastifyRequest): boolean {
  // The socket, not the request stream: a request whose body was read whole is "destroyed" too.
  if (req.raw.socket?.destroyed) return true;
  const { code, statusCode } = err as FastifyError;
  return typeof statusCode === 'number' && statusCode < 500 && (code === 'ECONNRESET' || code === 'ECONNABORTED');
}

export function errorHandler(err: FastifyError | Error, req: FastifyRequest, reply: FastifyReply): void {
  if (clientGone(err, req)) {
    req.log.debug({ route: req.routeOptions.url ?? null, code: (err as { code?: unknown }).code ?? null }, 'client closed the request');
    // Nobody reads an answer; sending one closes the reply cleanly.
    void reply.status(400).send({ error: { code: 'ERR_REQUEST_INVALID', message: 'the request was not received whole', details: [] } });
    return;
  }
  // A request that met the database down (a restart, a failover, a cut connection) can simply be
  // retried: say so with a 503, instead of a 500 that reads as a bug.
  if (!specOf(err) && isRetryableDbError(err)) {
    req.log.warn(failureFields(err, req), 'database unavailable');
    err = new AppError('ERR_DATABASE_UNAVAILABLE', 'the database is unavailable; retry shortly', { cause: err });
  }
  const spec = specOf(err);
  if (spec?.status) {
    const details = (err as { details?: ErrorDetail[] }).details ?? [];
    // A registered 500 is a bug or an internal failure: its code helps an operator, its text
    // (a step's error, say) may carry internals, so nobody sees it.
    const message = spec.status === 500 ? 'internal error' : err.message;
    if (spec.status >= 500) req.log.error({ ...failureFields((err as { cause?: unknown }).cause ?? err, req), code: spec.code }, 'request failed');
    // An error may know better when to come back (a rate limit's next token).
    if (spec.retryable) void reply.header('retry-after', String((err as { retryAfterS?: number }).retryAfterS ?? RETRY_AFTER_S));
    void reply.status(spec.status).send({ error: { code: spec.code, message, details } });
    return;
  }
  const fe = err as FastifyError;
  if (typeof fe.statusCode === 'number' && fe.statusCode >= 400 && fe.statusCode < 500) {
    void reply.status(fe.statusCode).send({
      error: { code: fe.code?.startsWith('FST_') ? 'ERR_REQUEST_INVALID' : fe.code ?? 'ERR_REQUEST_INVALID', message: fe.message, details: [] },
    });
    return;
  }
  req.log.error(failureFields(err, req), 'unhandled error');
  void reply.status(500).send({ error: { code: 'ERR_INTERNAL', message: 'internal error', details: [] } });
}

export function notFoundHandler(req: FastifyRequest, reply: FastifyReply): void {
  void reply.status(404).send({ error: { code: 'ERR_NOT_FOUND', message: `no route ${req.method} ${req.url.split('?')[0]}`, details: [] } });
}

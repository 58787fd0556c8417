// The one fastify error handler. Any error with a registered code (an AppError, a workflow's
// TerminalError surfacing through engine.call) answers with the status the registry in
// src/errors.ts gives it; fastify's own validation and parse errors become 400s; anything else
// is a 500 that logs the cause but never leaks internals to the client.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError, specOf, type ErrorDetail } from '../errors';
import { isRetryableDbError } from '../store/retryable';

/** Seconds a client should wait before retrying a retryable failure (an outage, a restart). */
const RETRY_AFTER_S = 1;

export function errorHandler(err: FastifyError | Error, req: FastifyRequest, reply: FastifyReply): void {
  // A request that met the database down (a restart, a failover, a cut connection) can simply be
  // retried: say so with a 503, instead of a 500 that reads as a bug. The driver's text names
  // hosts and ports, so it goes to the log only.
  if (!specOf(err) && isRetryableDbError(err)) {
    req.log.warn({ err }, 'database unavailable');
    err = new AppError('ERR_DATABASE_UNAVAILABLE', 'the database is unavailable; retry shortly', { cause: err });
  }
  const spec = specOf(err);
  if (spec?.status) {
    const details = (err as { details?: ErrorDetail[] }).details ?? [];
    // A registered 500 is a bug or an internal failure: its code helps an operator, its text
    // (a step's error, say) may carry internals, so only the log sees it.
    const message = spec.status === 500 ? 'internal error' : err.message;
    if (spec.status >= 500) req.log.error({ err, code: spec.code }, 'request failed');
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
  req.log.error({ err }, 'unhandled error');
  void reply.status(500).send({ error: { code: 'ERR_INTERNAL', message: 'internal error', details: [] } });
}

export function notFoundHandler(req: FastifyRequest, reply: FastifyReply): void {
  void reply.status(404).send({ error: { code: 'ERR_NOT_FOUND', message: `no route ${req.method} ${req.url.split('?')[0]}`, details: [] } });
}

// The one fastify error handler: coded AppErrors become their status and JSON body; fastify's
// own validation/parse errors become 400s; anything else is a 500 that logs the cause but
// never leaks internals to the client.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors';

export function errorHandler(err: FastifyError | AppError | Error, req: FastifyRequest, reply: FastifyReply): void {
  if (err instanceof AppError) {
    if (err.status >= 500) req.log.error({ err, code: err.code }, 'request failed');
    void reply.status(err.status).send({ error: err.toJSON() });
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

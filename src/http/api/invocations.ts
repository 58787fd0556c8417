// /v1/invocations: the engine's operator views (list, one with its journal, cancel). Secrets
// the workflows carry (webhook URLs, env values) are redacted (src/workflow/secrets.ts).
import type { FastifyInstance } from 'fastify';
import { redactInvocation } from '../../workflow/secrets';
import type { Engine } from '../../workflow/engine';
import { IdParams, ListInvocationsQuery } from './schemas';
import { parse } from './parse';

export function invocationRoutes(deps: { engine: Engine }) {
  const { engine } = deps;
  return (app: FastifyInstance) => {
    app.get('/v1/invocations', async (req) => {
      const q = parse(ListInvocationsQuery, req.query, 'query');
      return { invocations: (await engine.listInvocations(q)).map(redactInvocation) };
    });
    app.get('/v1/invocations/:id', async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      return redactInvocation(await engine.getInvocation(id));
    });
    app.post('/v1/invocations/:id/cancel', async (req) => {
      const { id } = parse(IdParams, req.params, 'params');
      return { id, ...(await engine.cancel(id)) };
    });
  };
}

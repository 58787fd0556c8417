// GET /v1/regions: every region that has an agent token, with its agent's liveness, lag and
// leader (src/workflow/regions.ts computes the view). Admin token, like the rest of /v1; a
// route group of its own so the registry is wired in one place (src/modes/ctrl.ts).
import type { FastifyInstance } from 'fastify';
import type { RegionRegistry } from '../../workflow/regions';
import { adminAuth } from '../auth';

export function regionRoutes(deps: { adminToken: string; regions: RegionRegistry }) {
  return (app: FastifyInstance) => {
    // onRequest, like every route: the token is checked before anything of the request is read.
    app.addHook('onRequest', adminAuth(deps.adminToken));
    app.get('/v1/regions', async () => deps.regions.list());
  };
}

// GET /v1/regions: every region that has an agent token, with its agent's liveness, lag and
// leader (src/workflow/regions.ts computes the view). The public API's guard (regions.read); a
// route group of its own so the registry is wired in one place (src/modes/ctrl.ts).
import type { FastifyInstance } from 'fastify';
import type { RegionRegistry } from '../../workflow/regions';
import type { KeyAuth } from '../keys';
import { publicGuard } from './guard';

export function regionRoutes(deps: { adminToken: string; keys: KeyAuth; regions: RegionRegistry }) {
  return (app: FastifyInstance) => {
    // onRequest, like every route: the caller is checked before anything of the request is read.
    app.addHook('onRequest', publicGuard(deps));
    app.get('/v1/regions', { config: { permission: 'regions.read' } }, async () => deps.regions.list());
  };
}

// GET /v1/regions: every region that has an agent token, with its agent's liveness, lag and
// leader (src/workflow/regions.ts computes the view). The public API's guard (regions.read); a
// route group of its own so the registry is wired in one place (src/modes/ctrl.ts).
import type { FastifyInstance } from 'fastify';
import type { RegionRegistry } from '../../workflow/regions';
import type { KeyAuth } from '../keys';
import { scopeOf } from '../permissions';
import { publicGuard } from './guard';
import { principalOf } from './scope';

export function regionRoutes(deps: { adminToken: string; keys: KeyAuth; regions: RegionRegistry }) {
  return (app: FastifyInstance) => {
    // onRequest, like every route: the caller is checked before anything of the request is read.
    app.addHook('onRequest', publicGuard(deps));
    // A key sees every region's liveness and lag, but of apply failures only its scope's, and
    // not which object drift repair last put back: those name other tenants' things.
    app.get('/v1/regions', { config: { permission: 'regions.read' } }, async (req) => deps.regions.list(undefined, scopeOf(principalOf(req))));
  };
}

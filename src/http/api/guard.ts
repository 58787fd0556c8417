// The public API's onRequest guard: who is calling (the admin token or a scoped API key), is it
// within its rate, and may it call this route, in that order: the rate comes first so a key
// cannot make ctrl check (and audit) refusals faster than it may call at all. A key that is
// known but refused (revoked, expired) is remembered on the request, so its refusal is audited
// under the key and not as an anonymous caller. It runs before fastify reads or parses a body,
// so a refused caller costs a header parse, a hash and at most one lookup. A refused request
// that still has a body coming is answered with `connection: close`, so Node closes the socket
// instead of reading and discarding the rest to keep the connection alive.
//
// A key's open calls are registered with KeyAuth, so a revocation or the key's expiry ends them
// within moments:
// WebSockets are closed by the event route (it holds them itself), other calls (a sentinel
// deploy waiting for its result, say) have their connection destroyed.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { unauthorized } from '../../errors';
import { bearerToken, tokensEqual } from '../auth';
import type { KeyAuth } from '../keys';
import { accessProblem, ADMIN, isPermission, type Permission, type Principal } from '../permissions';
import { apiKeys } from '../../store';
import { EVENTS_PATH, subprotocolToken } from './events';

const hasBody = (req: FastifyRequest) => Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;

export interface GuardDeps {
  adminToken: string;
  keys: KeyAuth;
}

/** The caller of a request, or a 401. */
export async function authenticate(req: FastifyRequest, deps: GuardDeps): Promise<Principal> {
  // The event socket may carry the credential as a subprotocol (browsers); never in the URL.
  const fromWs = req.routeOptions.url === EVENTS_PATH && !req.headers.authorization ? subprotocolToken(req) : undefined;
  const token = fromWs ?? bearerToken(req);
  if (!token) throw unauthorized();
  if (tokensEqual(token, deps.adminToken)) return ADMIN;
  if (!token.startsWith(apiKeys.KEY_PREFIX)) throw unauthorized('invalid admin token or API key');
  const r = await deps.keys.authenticate(token);
  if ('problem' in r) {
    if ('key' in r) req.refusedKey = { id: r.key.id, scope: { workspaceId: r.key.workspaceId, projectId: r.key.projectId, environmentId: r.key.environmentId } };
    throw unauthorized(r.problem === 'expired' ? 'this API key has expired' : 'invalid or revoked API key');
  }
  const k = r.key;
  return {
    type: 'key',
    id: k.id,
    scope: { workspaceId: k.workspaceId, projectId: k.projectId, environmentId: k.environmentId },
    permissions: new Set(k.permissions.filter(isPermission) as Permission[]),
    expiresAt: k.expiresAt,
  };
}

export function publicGuard(deps: GuardDeps) {
  return async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    try {
      const p = await authenticate(req, deps);
      req.principal = p;
      if (p.type !== 'key') return;
      deps.keys.take(p.id, p.scope.workspaceId);
      const refused = accessProblem(p, req.routeOptions.config ?? {});
      if (refused) throw refused;
      // WebSockets are held by their route (closing one is a WebSocket close, not a reset).
      if (req.routeOptions.url !== EVENTS_PATH) {
        const release = deps.keys.hold(p.id, () => req.raw.socket?.destroy(), p.expiresAt);
        reply.raw.once('close', release);
      }
    } catch (err) {
      if (hasBody(req)) void reply.header('connection', 'close');
      throw err;
    }
  };
}

// The public API's onRequest guard: who is calling (the admin token or a scoped API key), may
// it call this route, and is it within its rate. It runs before fastify reads or parses a body,
// so a refused caller costs a header parse, a hash and at most one lookup. A refused request
// that still has a body coming is answered with `connection: close`, so Node closes the socket
// instead of reading and discarding the rest to keep the connection alive.
//
// A key's open calls are registered with KeyAuth, so a revocation ends them within moments:
// WebSockets are closed by the event route (it holds them itself), other calls (a sentinel
// deploy waiting for its result, say) have their connection destroyed.
import type { FastifyReply, FastifyRequest } from 'fastify';
import { unauthorized, validationError } from '../../errors';
import { bearerToken, tokensEqual } from '../auth';
import type { KeyAuth } from '../keys';
import { accessProblem, ADMIN, isPermission, type Permission, type Principal } from '../permissions';
import { apiKeys } from '../../store';
import { EVENTS_PATH } from './events';

/** Subprotocol prefix carrying a bearer token (base64url) on a browser's WebSocket, which cannot
 *  set headers: it keeps the token out of URLs and access logs (the scheme Kubernetes uses). */
const WS_TOKEN_PROTOCOL = 'base64url.bearer.';

function websocketToken(req: FastifyRequest): string | undefined {
  const offered = String(req.headers['sec-websocket-protocol'] ?? '').split(',').map((p) => p.trim());
  const p = offered.find((x) => x.startsWith(WS_TOKEN_PROTOCOL));
  return p ? Buffer.from(p.slice(WS_TOKEN_PROTOCOL.length), 'base64url').toString('utf8') : undefined;
}

/** The ?token= of the event WebSocket (older clients; browsers use the subprotocol); given twice is a 400. */
function queryToken(req: FastifyRequest): string | undefined {
  const token = (req.query as Record<string, unknown>).token;
  if (Array.isArray(token)) throw validationError('invalid request query: token', [{ field: 'token', message: 'must be given once' }]);
  return typeof token === 'string' ? token : undefined;
}

const hasBody = (req: FastifyRequest) => Number(req.headers['content-length'] ?? 0) > 0 || req.headers['transfer-encoding'] !== undefined;

export interface GuardDeps {
  adminToken: string;
  keys: KeyAuth;
}

/** The caller of a request, or a 401. */
export async function authenticate(req: FastifyRequest, deps: GuardDeps): Promise<Principal> {
  const fromWs = req.routeOptions.url === EVENTS_PATH && !req.headers.authorization ? (websocketToken(req) ?? queryToken(req)) : undefined;
  const token = fromWs ?? bearerToken(req);
  if (!token) throw unauthorized();
  if (tokensEqual(token, deps.adminToken)) return ADMIN;
  if (!token.startsWith(apiKeys.KEY_PREFIX)) throw unauthorized('invalid admin token or API key');
  const r = await deps.keys.authenticate(token);
  if ('problem' in r) throw unauthorized(r.problem === 'expired' ? 'this API key has expired' : 'invalid or revoked API key');
  const k = r.key;
  return {
    type: 'key',
    id: k.id,
    scope: { workspaceId: k.workspaceId, projectId: k.projectId, environmentId: k.environmentId },
    permissions: new Set(k.permissions.filter(isPermission) as Permission[]),
  };
}

export function publicGuard(deps: GuardDeps) {
  return async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
    try {
      const p = await authenticate(req, deps);
      req.principal = p;
      if (p.type !== 'key') return;
      const refused = accessProblem(p, req.routeOptions.config ?? {});
      if (refused) throw refused;
      deps.keys.take(p.id);
      // WebSockets are held by their route (closing one is a WebSocket close, not a reset).
      if (req.routeOptions.url !== EVENTS_PATH) {
        const release = deps.keys.hold(p.id, () => req.raw.socket?.destroy());
        reply.raw.once('close', release);
      }
    } catch (err) {
      if (hasBody(req)) void reply.header('connection', 'close');
      throw err;
    }
  };
}

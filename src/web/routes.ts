// GET / and /assets/*: the web view. Public on purpose: the page carries no data and no secret;
// everything it shows comes from /v1 with the admin token the operator types in. The headers
// keep the page from being framed, sniffed, or made to run script that is not ours.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { AppError } from '../errors';
import { loadAssets, type Asset, type WebFile } from './assets';

/**
 * Script and styles only from our own files (no inline script or style attribute in markup),
 * API calls and the event WebSocket only to ctrl itself, no plugins, no forms posting away, and
 * no framing (clickjacking of the action buttons).
 */
export const CONTENT_SECURITY_POLICY = [
  "default-src 'none'",
  "script-src 'self'",
  "style-src 'self'",
  "img-src 'self' data:",
  "connect-src 'self'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'",
].join('; ');

export const SECURITY_HEADERS: Readonly<Record<string, string>> = {
  'content-security-policy': CONTENT_SECURITY_POLICY,
  'x-content-type-options': 'nosniff',
  'referrer-policy': 'no-referrer',
  // For browsers that predate frame-ancestors.
  'x-frame-options': 'DENY',
  'cross-origin-opener-policy': 'same-origin',
  'cross-origin-resource-policy': 'same-origin',
  // Always revalidate (the ETag makes that a 304): a new ctrl version is seen on the next load.
  'cache-control': 'no-cache',
};

export function webRoutes(app: FastifyInstance): void {
  let assets = loadAssets();
  const serve = (name: WebFile) => async (req: FastifyRequest, reply: FastifyReply) => {
    assets ??= loadAssets();
    const asset: Asset | undefined = assets?.get(name);
    if (!asset) throw new AppError('ERR_WEB_NOT_BUILT', 'the web view is not built: run `npm run build`');
    void reply.headers(SECURITY_HEADERS).header('etag', asset.etag);
    if (req.headers['if-none-match'] === asset.etag) return reply.status(304).send();
    return reply.type(asset.type).send(asset.body);
  };
  app.get('/', serve('index.html'));
  app.get('/assets/app.js', serve('app.js'));
  app.get('/assets/app.css', serve('app.css'));
}

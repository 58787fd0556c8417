// Web view: the page ctrl serves at `/`, and the route that serves it.
//
// - app/: the page itself, browser code (Preact, built by scripts/build-web.mjs into index.html,
//   app.js and app.css; type-checked by app/tsconfig.json with the DOM library). It talks only to
//   the public API under /v1 and the event WebSocket /v1/events, with the admin token the
//   operator enters once (kept in sessionStorage, sent as a bearer header; the WebSocket
//   carries it as a subprotocol, because browsers cannot set its headers: never in a URL).
//   Views refetch what they show when an event touches it, after every reconnect (events sent
//   while the socket was down are lost), and every few seconds while it is down (the fallback).
//   Pure parts (models/, format.ts, live.ts, api.ts's error reading, router.ts) hold the logic
//   and are table-tested in Node; the views render them.
// - assets.ts: the built files, embedded in the bundle at build time (nothing fetched at run
//   time, no CDN), or read from dist/web when running from source.
// - routes.ts: `webRoutes(app)`: GET /, /assets/app.js, /assets/app.css, public (the page holds
//   no data), with CSP (no inline script), nosniff, no-referrer and no framing.
//
// May import: errors.ts (server side). app/ imports nothing outside app/ but preact, and the
// API's JSON shapes type-only from cli/api.gen.ts (generated from ctrl's OpenAPI document by
// scripts/gen-api-types.ts) and the event union of live-events.ts (erased at build: no server
// code reaches the browser bundle).
//
// Registered in ctrl by http/ctrl-app.ts (`webRoutes(app)`), beside the probes: outside /v1,
// so no auth hook applies. Browser tests: tests/web/*.browser.test.ts; docs/web.md.
export { webRoutes, SECURITY_HEADERS, CONTENT_SECURITY_POLICY } from './routes';

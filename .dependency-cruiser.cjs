// The one-way seams of DESIGN.md section 3, as rules a machine checks on every `npm test`
// (`npm run boundaries`). A rule names the seam it keeps; the `comment` is what the failing run
// prints, so it says what to do instead. tests/kernel/boundaries.test.ts proves each rule
// fires on a deliberate wrong import, so a typo in a path pattern cannot silently disable one.

/** Parts other than the kernel (the files directly in src/) and the part itself. */
const parts = (...names) => `^src/(${names.join('|')})/`;

module.exports = {
  forbidden: [
    {
      name: 'no-cycles',
      severity: 'error',
      comment: 'modules import each other in a cycle: move the shared piece into a leaf module',
      from: { path: '^src/' },
      to: { circular: true },
    },
    {
      name: 'only-main-imports-modes',
      severity: 'error',
      comment: 'modes/ is wiring; only src/main.ts may import it (the CLI uses the public API)',
      from: { path: '^src/', pathNot: '^src/(main\\.ts|modes/)' },
      to: { path: '^src/modes/' },
    },
    {
      name: 'kernel-is-a-leaf',
      severity: 'error',
      comment: 'the kernel (files directly in src/) is imported by every part and imports none',
      from: { path: '^src/[^/]+\\.ts$', pathNot: '^src/main\\.ts$' },
      to: { path: '^src/[^/]+/' },
    },
    {
      name: 'engine-knows-no-transport-and-no-deployments',
      severity: 'error',
      comment:
        'the engine may use only the database client (store/db, store/retryable) and the kernel',
      from: { path: '^src/workflow/engine/' },
      to: {
        path: '^src/[^/]+/',
        pathNot: ['^src/workflow/engine/', '^src/store/(db|retryable)\\.ts$'],
      },
    },
    {
      name: 'store-returns-rows',
      severity: 'error',
      comment: 'the store knows no transport, workflows or wire format: it returns rows',
      from: { path: '^src/store/' },
      to: { path: parts('http', 'sync', 'workflow', 'kube', 'kube-sim', 'cli', 'modes', 'web') },
    },
    {
      name: 'tracing-is-a-leaf',
      severity: 'error',
      comment: 'tracing is used by every part (the engine through hooks); it may import only the kernel',
      from: { path: '^src/tracing/' },
      to: { path: '^src/[^/]+/', pathNot: '^src/tracing/' },
    },
    {
      name: 'wire-is-a-leaf',
      severity: 'error',
      comment: 'sync/wire is shared by both ends; it may import only the kernel',
      from: { path: '^src/sync/wire/' },
      to: { path: '^src/[^/]+/', pathNot: '^src/sync/wire/' },
    },
    {
      name: 'feed-knows-no-transport-or-workflows',
      severity: 'error',
      comment: 'the feed is mounted by http, never the other way round; workflows write desired state through the store',
      from: { path: '^src/sync/' },
      to: { path: parts('http', 'workflow', 'kube', 'kube-sim', 'cli', 'modes', 'web') },
    },
    {
      name: 'krane-never-touches-the-store',
      severity: 'error',
      comment: "krane's Kubernetes side learns desired state only through the wire protocol",
      from: { path: '^src/kube/' },
      to: { path: parts('store', 'http', 'workflow', 'cli', 'modes', 'web', 'kube-sim') },
    },
    {
      name: 'simulator-shares-no-code-with-krane',
      severity: 'error',
      comment: 'kube-sim stands in for Kubernetes; sharing code with krane would hide real mismatches',
      from: { path: '^src/kube-sim/' },
      to: { path: '^src/[^/]+/', pathNot: '^src/kube-sim/' },
    },
    {
      name: 'workflows-know-no-transport',
      severity: 'error',
      comment: 'workflows are called by http, never call into it',
      from: { path: '^src/workflow/' },
      to: { path: parts('http', 'cli', 'modes', 'web', 'kube-sim') },
    },
    {
      name: 'http-is-not-wiring',
      severity: 'error',
      comment: 'http apps receive their collaborators; they do not reach into the simulator or the CLI',
      from: { path: '^src/http/' },
      to: { path: parts('cli', 'modes', 'kube-sim') },
    },
    {
      name: 'cli-uses-the-public-api-only',
      severity: 'error',
      comment: 'the CLI talks to ctrl over HTTP; server modules are not part of its program',
      from: { path: '^src/cli/' },
      to: { path: parts('http', 'store', 'sync', 'workflow', 'kube', 'kube-sim', 'modes') },
    },
    {
      name: 'web-is-browser-code',
      severity: 'error',
      comment:
        'the page runs in the browser and talks to the public API only; it shares the JSON contract types (cli/api.gen, generated from the OpenAPI document, and live-events)',
      from: { path: '^src/web/app/' },
      to: { path: '^src/', pathNot: ['^src/web/app/', '^src/cli/api\\.gen\\.ts$', '^src/live-events\\.ts$'] },
    },
  ],
  options: {
    doNotFollow: { path: 'node_modules' },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: 'tsconfig.json' },
    exclude: { path: '^src/kube-sim/openapi/.*\\.json$' },
  },
};

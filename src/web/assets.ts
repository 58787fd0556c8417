// Where the web view's files come from. The bundle carries them as a constant injected by
// scripts/build.mjs, so ctrl serves the page with nothing beside the program and nothing fetched
// at run time. Running from source (tests, tsx), they are read from dist/web, which
// `npm run build` (or `node scripts/build-web.mjs`) writes.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

declare const __EMBEDDED_WEB__: Record<string, string> | undefined;

export interface Asset {
  body: Buffer;
  type: string;
  /** Strong validator of the content: the browser revalidates and gets a 304 when unchanged. */
  etag: string;
}

/** The files the page consists of, by name; build-web.mjs produces exactly these. */
export const WEB_FILES = {
  'index.html': 'text/html; charset=utf-8',
  'app.js': 'text/javascript; charset=utf-8',
  'app.css': 'text/css; charset=utf-8',
} as const;
export type WebFile = keyof typeof WEB_FILES;

export function toAssets(files: Record<string, string>): Map<WebFile, Asset> {
  const out = new Map<WebFile, Asset>();
  for (const [name, type] of Object.entries(WEB_FILES) as [WebFile, string][]) {
    const text = files[name];
    if (text === undefined) continue;
    const body = Buffer.from(text, 'utf8');
    out.set(name, { body, type, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"` });
  }
  return out;
}

function readFromDisk(): Record<string, string> {
  const dir = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'web');
  const files: Record<string, string> = {};
  for (const name of Object.keys(WEB_FILES)) {
    try {
      files[name] = readFileSync(join(dir, name), 'utf8');
    } catch {
      // Not built yet: the route says so and tries again on the next request.
    }
  }
  return files;
}

/** The page's files, or undefined while some are missing (source tree not built yet). */
export function loadAssets(): Map<WebFile, Asset> | undefined {
  const assets = toAssets(typeof __EMBEDDED_WEB__ !== 'undefined' ? __EMBEDDED_WEB__ : readFromDisk());
  return assets.size === Object.keys(WEB_FILES).length ? assets : undefined;
}

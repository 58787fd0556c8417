// Where the migration files come from. The bundle carries them as a constant injected by
// scripts/build.mjs (so `dist/unkey-infra.mjs` needs no sql/ directory beside it); running from
// source (tests, tsx) reads sql/ from disk.
import { readdirSync, readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';

declare const __EMBEDDED_MIGRATIONS__: { name: string; sql: string }[] | undefined;

export interface Migration {
  version: number;
  name: string;
  sql: string;
  checksum: string;
}

const FILE_PATTERN = /^(\d{4})_([a-z0-9_]+)\.sql$/;

export function parseMigrations(files: { name: string; sql: string }[]): Migration[] {
  const out: Migration[] = [];
  for (const f of files) {
    const m = FILE_PATTERN.exec(f.name);
    if (!m) throw new Error(`migration file ${f.name} does not match NNNN_name.sql`);
    out.push({
      version: Number(m[1]),
      name: f.name,
      sql: f.sql,
      checksum: createHash('sha256').update(f.sql).digest('hex'),
    });
  }
  out.sort((a, b) => a.version - b.version);
  for (let i = 1; i < out.length; i++) {
    if (out[i]!.version === out[i - 1]!.version) {
      throw new Error(`two migrations share version ${out[i]!.version}: ${out[i - 1]!.name}, ${out[i]!.name}`);
    }
  }
  return out;
}

function readFromDisk(): { name: string; sql: string }[] {
  const dir = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'sql');
  return readdirSync(dir)
    .filter((n) => n.endsWith('.sql'))
    .map((name) => ({ name, sql: readFileSync(join(dir, name), 'utf8') }));
}

let cached: Migration[] | undefined;

export function bundledMigrations(): Migration[] {
  cached ??= parseMigrations(
    typeof __EMBEDDED_MIGRATIONS__ !== 'undefined' ? __EMBEDDED_MIGRATIONS__ : readFromDisk(),
  );
  return cached;
}

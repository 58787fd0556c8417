// The peers bench:engine compares with (Restate, DBOS) are npm packages installed on first use
// into a cache directory outside the project (~/.cache/unkey-infra-bench/<peer>, or
// $UNKEY_INFRA_BENCH_CACHE), never dependencies of the bundle or of package.json: the project
// does not run them, it only measures beside them. Versions are pinned so a comparison names
// what it compared with. Restate's server is a binary inside an npm package (per platform, an
// optional dependency), so nothing is downloaded at run time. Install scripts are not run
// (the packages need none; one only reports the install to a telemetry service).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { homedir } from 'node:os';
import { join } from 'node:path';

export interface Peer {
  /** Directory name under the cache, and what the report calls it. */
  name: string;
  /** Exact versions: a comparison names what it compared with. */
  packages: Record<string, string>;
}

export const RESTATE: Peer = {
  name: 'restate',
  // 1.7.12 is the server the issue measured; 1.7.3 the newest 1.7 SDK.
  packages: { '@restatedev/restate-server': '1.7.12', '@restatedev/restate-sdk': '1.7.3' },
};

export const DBOS: Peer = { name: 'dbos', packages: { '@dbos-inc/dbos-sdk': '5.3.0' } };

export function cacheRoot(): string {
  return process.env.UNKEY_INFRA_BENCH_CACHE ?? join(homedir(), '.cache', 'unkey-infra-bench');
}

function installedVersion(dir: string, pkg: string): string | null {
  const file = join(dir, 'node_modules', pkg, 'package.json');
  return existsSync(file) ? (JSON.parse(readFileSync(file, 'utf8')) as { version: string }).version : null;
}

/** Installs the peer's packages when missing or at another version; returns its directory. */
export function ensurePeer(peer: Peer): string {
  const dir = join(cacheRoot(), peer.name);
  const specs = Object.entries(peer.packages);
  if (specs.every(([pkg, v]) => installedVersion(dir, pkg) === v)) return dir;
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: `unkey-infra-bench-${peer.name}`, private: true }));
  process.stderr.write(`bench: installing ${specs.map(([p, v]) => `${p}@${v}`).join(' ')} into ${dir}\n`);
  const r = spawnSync('npm', ['install', '--no-audit', '--no-fund', '--ignore-scripts', '--no-package-lock', ...specs.map(([p, v]) => `${p}@${v}`)], {
    cwd: dir,
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  if (r.status !== 0) throw new Error(`bench: npm install of ${peer.name} failed (exit ${r.status})`);
  for (const [pkg, v] of specs) {
    if (installedVersion(dir, pkg) !== v) throw new Error(`bench: ${pkg}@${v} is not in ${dir} after the install`);
  }
  return dir;
}

/** require() bound to the peer's directory (its packages, not the project's). */
export function peerRequire(dir: string): NodeJS.Require {
  return createRequire(join(dir, 'package.json'));
}

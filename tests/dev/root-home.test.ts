// `npm ci && npm start` as root from a private home (mode 0700, like /root): PostgreSQL runs as
// the `postgres` user, which can enter neither the project (its binaries are in node_modules)
// nor the data directory. dev must still start, deploy, restart onto the same data, and wipe
// it with --fresh. The project is a copy of the bundle and node_modules (hard links) inside a
// fresh 0700 directory that is also HOME and the working directory.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { chmodSync, copyFileSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readlinkSync, rmSync, statSync } from 'node:fs';
import { userInfo } from 'node:os';
import { join, resolve } from 'node:path';
import { cleanEnv, ensureBundle, ROOT, runBundle } from '../helpers/bundle';
import { freePort } from '../helpers/postgres';
import { alive, descendants, startDev, type DevRun } from './helpers';

const root = userInfo().uid === 0;

test('as root from a 0700 home: dev starts, a client command with no flags deploys, a restart keeps the data, --fresh wipes it', { skip: !root && 'only root runs PostgreSQL as another user' }, async () => {
  // On the repository's file system, so node_modules can be hard-linked instead of copied.
  mkdirSync(join(ROOT, '.tmp'), { recursive: true });
  const home = mkdtempSync(join(ROOT, '.tmp', 'root-home-'));
  chmodSync(home, 0o700);
  const project = join(home, 'unkey-infra');
  mkdirSync(join(project, 'dist'), { recursive: true });
  const bundle = join(project, 'dist', 'unkey-infra.mjs');
  copyFileSync(ensureBundle(), bundle);
  execFileSync('cp', ['-al', join(ROOT, 'node_modules'), join(project, 'node_modules')]);
  const env = cleanEnv({ HOME: home });
  const linkPath = join(project, '.unkey-infra', 'dev', 'pg');
  let relocated: string | undefined;
  after(() => {
    rmSync(home, { recursive: true, force: true });
    if (relocated) rmSync(resolve(relocated, '..'), { recursive: true, force: true });
  });

  const start = async (...extra: string[]) => startDev(['--regions', 'us-east-1', '--listen', `127.0.0.1:${await freePort()}`, '--ready-delay', '50', ...extra], { cwd: project, env, bundle });
  const stop = async (run: DevRun) => {
    const tree = descendants(run.child.pid!);
    const { code } = await run.stop('SIGINT');
    assert.equal(code, 0, run.stdout() + run.stderr());
    assert.deepEqual(tree.filter(alive), [], 'no process left');
  };
  const client = (args: string[]) => runBundle(args, { cwd: project, env, timeoutMs: 60_000 });

  const first = await start();
  // PostgreSQL's data could not live in the private directory: the data dir links to it.
  assert.ok(lstatSync(linkPath).isSymbolicLink(), `${linkPath} links to the relocated data`);
  relocated = readlinkSync(linkPath);
  assert.ok(existsSync(join(relocated, 'PG_VERSION')));
  assert.equal(statSync(relocated).uid, Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' })), 'owned by the postgres user');
  const deploy = await client(['deploy', '--image', 'nginx:1.27', '--replicas', '1', '--wait']);
  assert.equal(deploy.code, 0, deploy.stdout + deploy.stderr);
  const id = /created deployment (dep-[a-z0-9]+) \(us-east-1\)/.exec(deploy.stdout)?.[1];
  assert.ok(id, deploy.stdout);
  await stop(first);

  const second = await start();
  assert.equal(second.adminToken, first.adminToken);
  assert.equal(readlinkSync(linkPath), relocated, 'the same data directory again');
  const got = await client(['deployments', 'get', id, '--json']);
  assert.equal(got.code, 0, got.stderr);
  assert.equal(JSON.parse(got.stdout).status, 'ready', 'the deployment survived the restart');
  await stop(second);

  const fresh = await start('--fresh');
  assert.notEqual(fresh.adminToken, first.adminToken);
  const ls = await client(['deployments', 'ls', '--json']);
  assert.equal(ls.code, 0, ls.stderr);
  assert.deepEqual(JSON.parse(ls.stdout).deployments, [], '--fresh wiped the relocated data too');
  await stop(fresh);
});

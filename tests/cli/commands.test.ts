// The client commands against the real system (ctrl, kube-sims, kranes in-process on a test
// database), run through commander as main.ts registers them, with no flags: the API is found
// through a dev.json like the one `unkey-infra dev` writes. Each test makes what it needs
// (readyDeployment() is shared but created by whichever test asks first), so any one test
// passes alone (--test-name-pattern) and in any order.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertEvery } from '../helpers/assert';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after } from 'node:test';
import { memoryIo, type Io, type WatchOptions } from '../../src/cli';
import { testStack, until } from '../helpers/stack';
import { runCli as run, runProgram } from '../helpers/cli';

const stack = await testStack();
const cwd = mkdtempSync(join(tmpdir(), 'unkey-cli-commands-'));
after(() => rmSync(cwd, { recursive: true, force: true }));
mkdirSync(join(cwd, '.unkey-infra', 'dev'), { recursive: true });
writeFileSync(
  join(cwd, '.unkey-infra', 'dev', 'dev.json'),
  JSON.stringify({ apiUrl: stack.ctrl.url, adminToken: stack.adminToken, databaseUrl: stack.db.url, regions: { 'us-east-1': {}, 'eu-west-1': {} } }),
);

function runCli(argv: string[], opts: { io?: Io & { stdout(): string; stderr(): string }; watch?: Partial<WatchOptions> } = {}) {
  return run(argv, { ...(opts.io ? { io: opts.io } : {}), cwd, watch: { pollMs: 500, ...opts.watch } });
}

const json = (text: string) => JSON.parse(text) as any;

/** Creates a deployment through the API and waits for ready. */
async function deployReady(body: Record<string, unknown>): Promise<string> {
  const r = await stack.api('/v1/deployments', { body });
  assert.equal(r.status, 202, JSON.stringify(r.body));
  await until(async () => (await stack.api(`/v1/deployments/${r.body.id}`)).body.status === 'ready', 30_000, `deployment ${r.body.id} ready`);
  return r.body.id as string;
}

let shared: Promise<string> | undefined;
/** One ready deployment (nginx:1.27, both regions, 2 replicas) that the read-only tests share and nobody changes. */
const readyDeployment = () => (shared ??= deployReady({ image: 'nginx:1.27', regions: ['us-east-1', 'eu-west-1'], replicas: 2 }));

test('deploy --wait with no flags but the image: both dev regions, per-region progress appended, exit 0 on ready', async () => {
  const r = await runCli(['deploy', '--image', 'nginx:1.27', '--replicas', '2', '--env', 'GREETING=hello=world', '--wait']);
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const id = /created deployment (dep-[a-z0-9]+) \(us-east-1, eu-west-1\)/.exec(r.stdout)?.[1];
  assert.ok(id, r.stdout);
  for (const region of ['us-east-1', 'eu-west-1']) {
    assert.match(r.stdout, new RegExp(`\\]\\s+${region}\\s+0/2 ready`), `${region} starts at 0/2:\n${r.stdout}`);
    assert.match(r.stdout, new RegExp(`\\]\\s+${region}\\s+2/2 ready`), `${region} reaches 2/2:\n${r.stdout}`);
  }
  // How many intermediate statuses are seen depends on timing; each is shown once, in order.
  const statuses = [...r.stdout.matchAll(/\] deployment dep-[a-z0-9]+: (\w+)/g)].map((m) => m[1]!);
  assert.deepEqual(statuses, [...new Set(statuses)], r.stdout);
  assert.equal(statuses.at(-1), 'ready');
  const order = ['pending', 'building', 'deploying', 'network', 'ready'];
  assert.deepEqual([...statuses].sort((a, b) => order.indexOf(a) - order.indexOf(b)), statuses, 'statuses only move forward');
  assert.match(r.stdout, new RegExp(`deployment ${id} is ready after [\\d.]+m?s\\n  domains: `));
  assert.doesNotMatch(r.stdout, /\x1b\[/, 'no cursor movement when not on a terminal');
  const d = await stack.api(`/v1/deployments/${id}`);
  assert.equal(d.body.status, 'ready');
  // Views show env keys only (issue 16); the value itself goes to krane.
  assert.deepEqual(d.body.envKeys, ['GREETING']);
});

test('deploy --wait on a terminal redraws the per-region block in place', async () => {
  const io = memoryIo({ isTTY: true, columns: 120 });
  const r = await runCli(['deploy', '--image', 'nginx:1.27', '--regions', 'us-east-1', '--replicas', '1', '--wait'], { io });
  assert.equal(r.code, 0, r.stderr);
  assert.match(r.stdout, /us-east-1  \[##########\]  1\/1 ready/);
  assert.match(r.stdout, /\x1b\[2F\x1b\[J/, 'moves up over the status line and the region line');
});

test('deploy --wait still finishes with the live socket off (the periodic GET alone)', async () => {
  const r = await runCli(['deploy', '--image', 'nginx:1.27', '--regions', 'eu-west-1', '--replicas', '1', '--wait', '--json'], { watch: { live: false, pollMs: 100 } });
  assert.equal(r.code, 0, r.stderr);
  const d = json(r.stdout);
  assert.equal(d.status, 'ready');
  assert.deepEqual(d.topology.map((t: any) => [t.region, t.running, t.wanted]), [['eu-west-1', 1, 1]]);
});

test('deploy without --wait prints only the id (or the API JSON with --json)', async () => {
  const plain = await runCli(['deploy', '--image', 'nginx:1.27', '--regions', 'us-east-1', '--replicas', '1']);
  assert.equal(plain.code, 0, plain.stderr);
  assert.match(plain.stdout, /^dep-[a-z0-9]+\n$/);
  const withJson = await runCli(['deploy', '--image', 'nginx:1.27', '--regions', 'us-east-1', '--replicas', '1', '--json']);
  assert.equal(withJson.code, 0, withJson.stderr);
  assert.match(json(withJson.stdout).id, /^dep-/);
  assert.equal(typeof json(withJson.stdout).status, 'string');
});

test('deployments ls and get, human and --json', async () => {
  const readyId = await readyDeployment();
  const ls = await runCli(['deployments', 'ls']);
  assert.equal(ls.code, 0, ls.stderr);
  // kubectl's columns: READY is running/wanted over the regions, AGE as kubectl writes it.
  assert.match(ls.stdout, /^ID\s+VERSION\s+STATUS\s+READY\s+REGIONS\s+AGE\s+ERROR\n/);
  assert.match(ls.stdout, new RegExp(`${readyId}\\s+v\\d+\\s+ready\\s+4/4\\s+us-east-1,eu-west-1\\s+\\d+(s|m)\\S*\\s+-\\n`));
  const wide = await runCli(['deployments', 'ls', '-o', 'wide']);
  assert.match(wide.stdout, /^ID\s+VERSION\s+STATUS\s+READY\s+REGIONS\s+AGE\s+DESIRED\s+STRATEGY\s+SOURCE\s+RESOURCES\s+ERROR\n/);
  assert.match(wide.stdout, new RegExp(`${readyId}\\s+v\\d+\\s+ready\\s+4/4\\s+\\S+\\s+\\S+\\s+running\\s+rolling\\s+nginx:1.27\\s+`));
  const lsJson = json((await runCli(['deployments', 'ls', '--json'])).stdout);
  assert.ok(lsJson.deployments.some((d: any) => d.id === readyId && d.status === 'ready'));

  const get = await runCli(['deployments', 'get', readyId]);
  assert.equal(get.code, 0, get.stderr);
  assert.match(get.stdout, /status:\s+ready/);
  assert.match(get.stdout, /REGION\s+DESIRED\s+STATUS\s+READY\s+PENDING\s+FAILED\neu-west-1\s+running\s+started\s+2\/2\s+0\s+0\nus-east-1\s+running\s+started\s+2\/2/);
  assert.match(get.stdout, /INSTANCE\s+REGION\s+STATUS/);
  assert.match(get.stdout, /STEP\s+KIND\s+STATUS\s+TOOK/);
  const getJson = json((await runCli(['deployments', 'get', readyId, '--json'])).stdout);
  assert.equal(getJson.id, readyId);
  assert.equal(getJson.instances.length, 4);
});

test('deployments stop, start, rollback --wait, promote', async () => {
  const readyId = await deployReady({ image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1 });
  const stop = await runCli(['deployments', 'stop', readyId]);
  assert.equal(stop.code, 0, stop.stderr);
  assert.equal(stop.stdout, `deployment ${readyId}: desired state stopped\n`);
  assert.equal((await stack.api(`/v1/deployments/${readyId}`)).body.desiredState, 'stopped');
  const start = json((await runCli(['deployments', 'start', readyId, '--json'])).stdout);
  assert.deepEqual(start, { id: readyId, desiredState: 'running', changed: true, generation: 2 });

  const rb = await runCli(['deployments', 'rollback', readyId, '--wait']);
  assert.equal(rb.code, 0, rb.stderr + rb.stdout);
  const newId = new RegExp(`created deployment (dep-[a-z0-9]+) from the config of ${readyId}`).exec(rb.stdout)?.[1];
  assert.ok(newId && newId !== readyId, rb.stdout);
  assert.match(rb.stdout, new RegExp(`deployment ${newId} is ready`));
  const rolled = (await stack.api(`/v1/deployments/${newId}`)).body;
  assert.equal(rolled.rolledBackFrom, readyId);
  assert.equal(rolled.image, 'nginx:1.27');

  const promote = await runCli(['deployments', 'promote', newId, '--json']);
  assert.equal(promote.code, 0, promote.stderr);
  const p = json(promote.stdout);
  assert.equal(p.deploymentId, newId);
  assert.ok(p.hostnames.length >= 1);
  const human = await runCli(['deployments', 'promote', newId]);
  assert.match(human.stdout, new RegExp(`^promoted ${newId}\\n  \\S+`));
});

test('invocations ls and show (journal), human and --json', async () => {
  const readyId = await readyDeployment();
  const ls = json((await runCli(['invocations', 'ls', '--json', '--status', 'completed'])).stdout);
  const deploy = ls.invocations.find((i: any) => i.key === readyId && i.handler === 'deploy');
  assert.ok(deploy, JSON.stringify(ls.invocations.map((i: any) => [i.service, i.handler, i.key])));
  const human = await runCli(['invocations', 'ls', '--target', deploy.service]);
  assert.equal(human.code, 0, human.stderr);
  assert.match(human.stdout, new RegExp(`${deploy.id}\\s+${deploy.service}\\s+deploy\\s+${readyId}\\s+completed`));
  assert.doesNotMatch(human.stdout, /SentinelService/, '--target filters by service');

  const show = await runCli(['invocations', 'show', deploy.id]);
  assert.equal(show.code, 0, show.stderr);
  assert.match(show.stdout, new RegExp(`invocation ${deploy.id}: ${deploy.service}/deploy key ${readyId}`));
  assert.match(show.stdout, /journal:\nSEQ\s+KIND\s+NAME\s+STATUS\s+TOOK\s+FAILURE\n/);
  const shown = json((await runCli(['invocations', 'show', deploy.id, '--json'])).stdout);
  assert.ok(shown.journal.length > 3);
  assertEvery(shown.journal, (j: any) => show.stdout.includes(j.name), 'every journal entry is listed');
});

test('sentinels ls and deploy (unchanged: READY at once)', async () => {
  // Sentinels are made by the deploy workflow (one per environment and region), so this test
  // asks for the shared two-region deployment first instead of relying on an earlier test.
  await readyDeployment();
  const ls = json((await runCli(['sentinels', 'ls', '--json'])).stdout);
  assert.deepEqual(ls.sentinels.map((s: any) => s.region).sort(), ['eu-west-1', 'us-east-1']);
  const human = await runCli(['sentinels', 'ls', '--region', 'us-east-1']);
  assert.match(human.stdout, /^ID\s+ENVIRONMENT\s+REGION\s+READY\s+UP-TO-DATE\s+AVAILABLE\s+HEALTH\s+DEPLOY\s+AGE\n\S+\s+default\s+us-east-1\s+\d+\/\d+\s/);
  assert.doesNotMatch(human.stdout, /eu-west-1/);
  const id = ls.sentinels[0].id;
  const dep = await runCli(['sentinels', 'deploy', id]);
  assert.equal(dep.code, 0, dep.stderr);
  assert.match(dep.stdout, new RegExp(`^sentinel ${id}: READY on \\S+\\n$`));
});

test('deploy --wait is driven by live events: with the periodic GET ten minutes apart it still ends at once', async () => {
  // Only the event socket can move this watch: if /v1/events sent nothing, it would time out.
  const r = await runCli(['deploy', '--image', 'nginx:1.27', '--regions', 'us-east-1', '--replicas', '1', '--wait', '--timeout', '60s'], { watch: { pollMs: 600_000 } });
  assert.equal(r.code, 0, r.stderr + r.stdout);
  assert.match(r.stdout, /\]\s+us-east-1\s+1\/1 ready/, 'region progress came from deployment.region events');
  assert.match(r.stdout, /deployment dep-[a-z0-9]+ is ready/);
  assert.equal(r.stderr, '', 'no fallback to polling');
});

test('through the built program: env vars configure the API, --wait ends and the process exits on its own with 0', async () => {
  const r = await runProgram(['deploy', '--image', 'nginx:1.27', '--regions', 'us-east-1', '--replicas', '1', '--wait'], {
    env: { UNKEY_INFRA_API: stack.ctrl.url, UNKEY_INFRA_TOKEN: stack.adminToken, UNKEY_INFRA_DATA_DIR: join(cwd, 'absent') },
    cwd,
    timeoutMs: 60_000,
  });
  assert.equal(r.code, 0, `the process must exit by itself with 0 (no open sockets or timers left):\n${r.stdout}${r.stderr}`);
  assert.match(r.stdout, /deployment dep-[a-z0-9]+ is ready/);
});

// The client commands when things go wrong, against the real system: a crash-looping image,
// API validation errors, unknown ids and a wrong token, a client timeout, and ctrl going away
// in the middle of `deploy --wait`.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { EXIT_UNKNOWN, memoryIo, type Io, type WatchOptions } from '../../src/cli';
import { testStack, until } from '../helpers/stack';
import { runCli as run } from '../helpers/cli';

const stack = await testStack();
// Pods of this stack never become ready: deploys stay in progress for the timeout and ctrl-loss cases.
const slow = await testStack({ regions: ['us-east-1'], readyDelayMs: 600_000 });

function runCli(argv: string[], opts: { io?: Io & { stdout(): string; stderr(): string }; watch?: Partial<WatchOptions>; api?: { url: string; token: string } } = {}) {
  const api = opts.api ?? { url: stack.ctrl.url, token: stack.adminToken };
  return run(argv, { ...(opts.io ? { io: opts.io } : {}), env: { UNKEY_INFRA_API: api.url, UNKEY_INFRA_TOKEN: api.token }, watch: { pollMs: 500, ...opts.watch } });
}

const countDeployments = async () => (await stack.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM deployments`)[0]!.n;

test('deploy --wait of a crash-looping image exits 1 with the reason (CrashLoopBackOff)', async () => {
  const r = await runCli(['deploy', '--image', 'registry.local/crash:1', '--regions', 'us-east-1,eu-west-1', '--replicas', '1', '--wait']);
  assert.equal(r.code, 1, r.stdout + r.stderr);
  const id = /created deployment (dep-[a-z0-9]+)/.exec(r.stdout)?.[1];
  assert.ok(id, r.stdout);
  assert.match(r.stderr, new RegExp(`^unkey-infra: deployment ${id} failed: .*CrashLoopBackOff`, 'm'));
  assert.match(r.stderr, new RegExp(`details: unkey-infra deployments get ${id}`));
  assert.match(r.stdout, /deployment dep-[a-z0-9]+: failed \(.*CrashLoopBackOff\)/, 'the progress view shows the failure too');
  assert.equal((await stack.api(`/v1/deployments/${id}`)).body.status, 'failed');

  const json = await runCli(['deployments', 'get', id, '--json']);
  assert.match(JSON.parse(json.stdout).error, /CrashLoopBackOff/);
});

test('a 400 from the API prints every bad field with its flag, exits 1, and nothing is written', async () => {
  const before = await countDeployments();
  const r = await runCli(['deploy', '--image', 'nginx:1.27', '--regions', 'us-east-1,Not_A_Region', '--replicas', '0', '--cpu', '5', '--env', '1BAD=x']);
  assert.equal(r.code, 1, r.stderr);
  assert.equal(r.stdout, '');
  const lines = r.stderr.trimEnd().split('\n');
  assert.match(lines[0]!, /^unkey-infra: invalid request body: .* \(HTTP 400 ERR_VALIDATION_INVALID\)$/);
  assert.ok(lines.some((l) => /^ {2}regions\.1 \(--regions\): /.test(l)), r.stderr);
  assert.ok(lines.some((l) => /^ {2}replicas \(--replicas\): /.test(l)), r.stderr);
  assert.ok(lines.some((l) => /^ {2}cpuMillicores \(--cpu\): /.test(l)), r.stderr);
  assert.ok(lines.some((l) => /^ {2}env\.1BAD \(--env\): /.test(l)), r.stderr);
  assert.equal(await countDeployments(), before);

  const inv = await runCli(['invocations', 'ls', '--status', 'sleeping']);
  assert.equal(inv.code, 1);
  assert.match(inv.stderr, /HTTP 400 ERR_VALIDATION_INVALID\)\n {2}status: /);
});

test('unknown ids and a wrong token are API errors with their code, exit 1', async () => {
  const missing = await runCli(['deployments', 'get', 'dep-doesnotexist']);
  assert.equal(missing.code, 1);
  assert.equal(missing.stderr, 'unkey-infra: deployment dep-doesnotexist not found (HTTP 404 ERR_NOT_FOUND)\n');
  const cancel = await runCli(['invocations', 'show', 'inv-nope']);
  assert.equal(cancel.code, 1);
  assert.match(cancel.stderr, /HTTP 404 ERR_NOT_FOUND/);
  const denied = await runCli(['deployments', 'ls'], { api: { url: stack.ctrl.url, token: 'wrong-token-0123456789' } });
  assert.equal(denied.code, 1);
  assert.match(denied.stderr, /invalid admin token or API key \(HTTP 401 ERR_AUTH_UNAUTHORIZED\)/);
});

test('deploy --wait gives up after --timeout with exit 3, saying the deployment carries on', async () => {
  const r = await runCli(['deploy', '--image', 'nginx:1.27', '--regions', 'us-east-1', '--replicas', '1', '--wait', '--timeout', '700ms'], {
    api: { url: slow.ctrl.url, token: slow.adminToken },
  });
  assert.equal(r.code, EXIT_UNKNOWN, r.stderr);
  assert.match(r.stderr, /gave up waiting after [\d.]+m?s: deployment dep-[a-z0-9]+ is still (pending|building|deploying)/);
  assert.match(r.stderr, /unkey-infra deployments get dep-/);

  // The deploy it gave up on is still running server-side (its sentinel never becomes ready):
  // an operator can find its invocation and cancel it.
  const id = /deployment (dep-[a-z0-9]+) is still/.exec(r.stderr)![1]!;
  const ls = await runCli(['invocations', 'ls', '--json', '--target', 'DeployService'], { api: { url: slow.ctrl.url, token: slow.adminToken } });
  const inv = JSON.parse(ls.stdout).invocations.find((i: any) => i.key === id && i.handler === 'deploy');
  assert.ok(inv, ls.stdout);
  const cancel = await runCli(['invocations', 'cancel', inv.id], { api: { url: slow.ctrl.url, token: slow.adminToken } });
  assert.equal(cancel.code, 0, cancel.stderr);
  assert.match(cancel.stdout, new RegExp(`^invocation ${inv.id}: cancel requested \\(now \\w+\\)\n$`));
  await until(async () => {
    const shown = await runCli(['invocations', 'show', inv.id, '--json'], { api: { url: slow.ctrl.url, token: slow.adminToken } });
    return ['cancelled', 'failed'].includes(JSON.parse(shown.stdout).status);
  }, 10_000, 'the deploy invocation ends after cancel');
});

test('ctrl going away during deploy --wait: a clear message and exit 3 once it stays unreachable', async () => {
  const io = memoryIo();
  const running = runCli(['deploy', '--image', 'nginx:1.27', '--regions', 'us-east-1', '--replicas', '1', '--wait'], {
    io,
    api: { url: slow.ctrl.url, token: slow.adminToken },
    watch: { pollMs: 100, unreachableMs: 600 },
  });
  await until(() => /us-east-1\s+0\/1 ready/.test(io.stdout()), 30_000, 'progress shown');
  await slow.ctrl.close();
  const r = await running;
  assert.equal(r.code, EXIT_UNKNOWN, r.stdout + r.stderr);
  // The live socket may go first (said once) or only after polling found ctrl gone for good
  // (then nothing is said of it): which one depends on how the server closes its sockets.
  assert.match(
    r.stderr,
    new RegExp(`^(unkey-infra: live events unavailable \\(.+\\); following by polling every 100ms\n)?unkey-infra: lost contact with ctrl at ${slow.ctrl.url} \\(ECONNREFUSED\\) while deployment dep-[a-z0-9]+ was \\w+\n`),
  );
});

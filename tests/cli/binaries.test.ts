// The shipped program end to end, as operators run it: ctrl, kube-sim and krane as three
// processes of the built bundle (the container entrypoints), wired only by flags, a written
// kubeconfig and a token made with `ctrl tokens create`; and the operator flags as wired:
// agent tokens remembered across a restart without the flag, $KUBECONFIG, --image-pull-secret.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { emptyDb } from '../helpers/db';
import { cleanEnv, runBundle, spawnBundle, waitForHttp } from '../helpers/bundle';
import { freePort } from '../helpers/postgres';
import { until } from '../helpers/stack';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '../../src/kube/client';
import { WORKLOAD_NAMESPACE } from '../../src/sync/wire';

test('ctrl, kube-sim and krane as separate processes deploy an image to ready', async () => {
  const db = await emptyDb();
  const dir = mkdtempSync(join(tmpdir(), 'unkey-binaries-'));
  const children: ChildProcess[] = [];
  after(() => {
    for (const c of children) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  const [ctrlPort, simPort, kranePort] = [await freePort(), await freePort(), await freePort()];
  const admin = 'binaries-admin-token-0123';
  const ctrl = spawnBundle(['ctrl', '--listen', `127.0.0.1:${ctrlPort}`, '--log-level', 'warn'], {
    env: cleanEnv({ UNKEY_INFRA_DATABASE_URL: db.url, UNKEY_INFRA_ADMIN_TOKEN: admin, UNKEY_INFRA_DEPLOY_TIMEOUT: '60s' }),
  });
  children.push(ctrl);
  await waitForHttp(`http://127.0.0.1:${ctrlPort}/readyz`);

  const tok = await runBundle(['ctrl', 'tokens', 'create', '--region', 'us-east-1', '--database-url', db.url]);
  assert.equal(tok.code, 0, tok.stderr);
  const kubeconfig = join(dir, 'kubeconfig');
  const sim = spawnBundle(['kube-sim', '--port', String(simPort), '--ready-delay', '20', '--kubeconfig-out', kubeconfig, '--log-level', 'warn']);
  children.push(sim);
  await waitForHttp(`http://127.0.0.1:${simPort}/readyz`);
  // The kubeconfig is written (atomically) just after the server listens.
  await until(() => existsSync(kubeconfig), 5000, 'kubeconfig written');
  assert.ok(readFileSync(kubeconfig, 'utf8').includes(`https://127.0.0.1:${simPort}`), 'the kubeconfig points at the simulator (TLS, so kubectl sends its token)');

  const krane = spawnBundle(
    ['krane', '--region', 'us-east-1', '--control-plane', `http://127.0.0.1:${ctrlPort}`, '--token', tok.stdout.trim(), '--kubeconfig', kubeconfig, '--listen', `127.0.0.1:${kranePort}`, '--log-level', 'warn'],
  );
  children.push(krane);
  await waitForHttp(`http://127.0.0.1:${kranePort}/readyz`, 200, 20_000);

  // The client commands of the same binary, configured by the environment.
  const clientEnv = cleanEnv({ UNKEY_INFRA_API: `http://127.0.0.1:${ctrlPort}`, UNKEY_INFRA_TOKEN: admin });
  const deploy = await runBundle(['deploy', '--image', 'nginx:1.27', '--regions', 'us-east-1', '--replicas', '1', '--wait', '--timeout', '60s'], { env: clientEnv, timeoutMs: 70_000 });
  assert.equal(deploy.code, 0, deploy.stdout + deploy.stderr);
  const id = /(dep-[a-z0-9]+)/.exec(deploy.stdout)![1]!;
  const ls = await runBundle(['deployments', 'get', id, '--json'], { env: clientEnv });
  assert.equal(JSON.parse(ls.stdout).status, 'ready');

  // krane stops cleanly on SIGTERM.
  krane.kill('SIGTERM');
  const code = await new Promise<number | null>((r) => krane.once('exit', r));
  assert.equal(code, 0);
  await until(() => krane.exitCode !== null, 1000, 'krane exited');
});

test('agent tokens given to ctrl are remembered when it restarts without the flag; krane finds its kubeconfig through $KUBECONFIG and adds --image-pull-secret', async () => {
  const db = await emptyDb();
  const dir = mkdtempSync(join(tmpdir(), 'unkey-binaries-'));
  const children: ChildProcess[] = [];
  after(() => {
    for (const c of children) c.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
  });
  const [ctrlPort, simPort, kranePort] = [await freePort(), await freePort(), await freePort()];
  const admin = 'binaries-admin-token-0123';
  const agent = 'uka_remembered-agent-token-0123456789';
  const ctrlEnv = cleanEnv({ UNKEY_INFRA_DATABASE_URL: db.url, UNKEY_INFRA_ADMIN_TOKEN: admin, UNKEY_INFRA_DEPLOY_TIMEOUT: '60s' });
  const first = spawnBundle(['ctrl', '--listen', `127.0.0.1:${ctrlPort}`, '--agent-tokens', `us-east-1=${agent}`, '--log-level', 'warn'], { env: ctrlEnv });
  children.push(first);
  await waitForHttp(`http://127.0.0.1:${ctrlPort}/readyz`);
  first.kill('SIGTERM');
  assert.equal(await new Promise<number | null>((r) => first.once('exit', r)), 0);
  // The same ctrl again, without --agent-tokens: the token still opens the cluster API.
  const second = spawnBundle(['ctrl', '--listen', `127.0.0.1:${ctrlPort}`, '--log-level', 'warn'], { env: ctrlEnv });
  children.push(second);
  await waitForHttp(`http://127.0.0.1:${ctrlPort}/readyz`);

  const kubeconfig = join(dir, 'kubeconfig');
  const sim = spawnBundle(['kube-sim', '--port', String(simPort), '--ready-delay', '20', '--kubeconfig-out', kubeconfig, '--log-level', 'warn']);
  children.push(sim);
  await waitForHttp(`http://127.0.0.1:${simPort}/readyz`);
  await until(() => existsSync(kubeconfig), 5000, 'kubeconfig written');
  // No --kubeconfig: outside a pod krane takes $KUBECONFIG, as the help says.
  const krane = spawnBundle(
    ['krane', '--region', 'us-east-1', '--control-plane', `http://127.0.0.1:${ctrlPort}`, '--token', agent, '--image-pull-secret', 'regcred', '--listen', `127.0.0.1:${kranePort}`, '--log-level', 'warn'],
    { env: cleanEnv({ KUBECONFIG: kubeconfig, HOME: dir }) },
  );
  children.push(krane);
  await waitForHttp(`http://127.0.0.1:${kranePort}/readyz`, 200, 20_000);

  const clientEnv = cleanEnv({ UNKEY_INFRA_API: `http://127.0.0.1:${ctrlPort}`, UNKEY_INFRA_TOKEN: admin });
  const deploy = await runBundle(['deploy', '--image', 'registry.private/app:1', '--regions', 'us-east-1', '--replicas', '1', '--wait', '--timeout', '60s'], { env: clientEnv, timeoutMs: 70_000 });
  assert.equal(deploy.code, 0, deploy.stdout + deploy.stderr);
  const id = /(dep-[a-z0-9]+)/.exec(deploy.stdout)![1]!;
  // Read back through the unchanged Kubernetes client, from the same kubeconfig.
  const kc = new KubeConfig();
  kc.loadFromFile(kubeconfig);
  const api = new KubeClient(kc);
  const [sts] = (await api.list('apps/v1', 'StatefulSet', WORKLOAD_NAMESPACE, `unkey.com/deployment.id=${id}`)).items as any[];
  assert.deepEqual(sts.spec.template.spec.imagePullSecrets.map((s: { name: string }) => s.name), ['regcred']);
});

// `npm run bench:kube`: krane's Kubernetes side against the simulator (in a child process).
//   1. full sync of N deployments from empty (apply all, then GC with the snapshot's set)
//   2. the same full sync again with nothing changed, warm (same krane process)
//   3. the same full sync from a restarted krane (cold inventory: verified by listing)
//   4. GC of the N deployments as stale (2 objects each)
// Requests and writes are counted by the simulator (`/_sim/stats`): `writes` are requests
// with a write verb, `mutations` the writes that changed stored state.
// Prints one JSON object on the last line. N = BENCH_KUBE_N (default 1000).
import { spawn } from 'node:child_process';
import { createInterface } from 'node:readline';
import { KubeConfig } from '@kubernetes/client-node';
import { KubeClient } from '../src/kube/client';
import { SIM_TOKEN } from '../src/kube-sim';
import { ApplyController } from '../src/kube/apply-controller';
import { createLogger } from '../src/log';
import { refKey, type DeploymentApply, type ResourceRef } from '../src/sync/wire';

const N = Number(process.env.BENCH_KUBE_N ?? 1000);
/** Matches krane's watcher concurrency (src/modes/krane.ts APPLY_CONCURRENCY). */
const CONCURRENCY = 16;
const REGION = 'us-east-1';

const child = spawn(process.execPath, ['--import', 'tsx', new URL('./_kube-sim-child.ts', import.meta.url).pathname], {
  stdio: ['ignore', 'pipe', 'inherit'],
});
const url: string = await new Promise((resolve, reject) => {
  createInterface(child.stdout!).once('line', resolve);
  child.once('exit', (code) => reject(new Error(`kube-sim exited with ${code}`)));
});

try {
  const kc = new KubeConfig();
  kc.loadFromOptions({
    clusters: [{ name: 'sim', server: url, skipTLSVerify: true }],
    users: [{ name: 'sim', token: SIM_TOKEN }],
    contexts: [{ name: 'sim', cluster: 'sim', user: 'sim', namespace: 'default' }],
    currentContext: 'sim',
  });
  const logger = createLogger('warn');
  const newController = (gcMaxFraction?: number) => new ApplyController({ api: new KubeClient(kc), region: REGION, logger, verifyAfterMs: 10 * 60_000, gcMaxFraction });

  const stats = async () => (await (await fetch(`${url}/_sim/stats`)).json()) as { requests: number; writes: number; mutations: number; byVerb: Record<string, number> };
  const reset = () => fetch(`${url}/_sim/stats/reset`, { method: 'POST' });

  const items: { ref: ResourceRef; state: DeploymentApply }[] = [];
  for (let i = 0; i < N; i++) {
    const id = `dep-bench${String(i).padStart(6, '0')}`;
    items.push({
      ref: { type: 'deployment_topology', id, region: REGION },
      state: {
        action: 'apply', kind: 'deployment', deploymentId: id, workspaceId: 'ws-bench', projectId: 'prj-bench', appId: 'app-bench',
        environmentId: 'env-bench', region: REGION, namespace: 'unkey', image: 'registry.example/app:v1', replicas: 1,
        cpuMillicores: 100, memoryMib: 128, port: 8080, command: [], env: { MODE: 'bench' },
      },
    });
  }

  async function pool<T>(list: T[], fn: (t: T) => Promise<void>): Promise<void> {
    let next = 0;
    await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
      while (next < list.length) await fn(list[next++]!);
    }));
  }

  async function fullSync(ctl: ApplyController, desired: Set<string>) {
    await reset();
    const t0 = performance.now();
    await pool(items, (it) => ctl.apply(it.ref, it.state));
    await ctl.gc(desired);
    const ms = performance.now() - t0;
    const s = await stats();
    return { ms: Math.round(ms), requests: s.requests, writes: s.writes, mutations: s.mutations, byVerb: pick(s.byVerb) };
  }

  const pick = (v: Record<string, number>) => Object.fromEntries(Object.entries(v).filter(([, n]) => n > 0));
  const desired = new Set(items.map((i) => refKey(i.ref)));

  const krane = newController();
  const fromEmpty = await fullSync(krane, desired);
  const warm = await fullSync(krane, desired);
  const restarted = await fullSync(newController(), desired);

  await reset();
  const t0 = performance.now();
  // The brake off (1): this measures a deliberate mass deletion, which an operator confirmed.
  const gcKrane = newController(1);
  await gcKrane.gc(new Set());
  const gcMs = performance.now() - t0;
  const g = await stats();
  const gc = { ms: Math.round(gcMs), resources: N, objectsDeleted: gcKrane.stats.deleted, requests: g.requests, writes: g.writes, byVerb: pick(g.byVerb) };

  console.log(JSON.stringify({
    bench: 'kube',
    deployments: N,
    objectsPerDeployment: 2,
    concurrency: CONCURRENCY,
    fullSyncFromEmpty: { ...fromEmpty, perDeploymentMs: +(fromEmpty.ms / N).toFixed(3) },
    secondFullSyncWarm: warm,
    secondFullSyncAfterRestart: restarted,
    gcStale: gc,
  }));
} finally {
  child.kill('SIGTERM');
}

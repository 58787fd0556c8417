// `npm run bench:deploy`: orchestration overhead of a deploy, create → ready, with the
// simulators' ready delay 0, over 20 deploys to two regions (issue 6: p50 < 1 s). The first
// deploy of an environment also creates and converges its sentinels; it is a warm-up and
// reported apart. Everything runs in-process on its own embedded PostgreSQL.
// Prints one JSON object on the last stdout line.
import { performance } from 'node:perf_hooks';
import { startPostgres } from '../tests/helpers/postgres';
import { startStack } from '../src/modes/stack';
import { Watcher } from '../src/sync/watcher';

/** The sample size. */
const DEPLOYS = 20;
/** Status polling step: small against the latencies measured, cheap for Postgres. */
const POLL_MS = 2;

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round(s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!);
};

const pg = await startPostgres();
const stack = await startStack({
  databaseUrl: pg.adminUrl,
  regions: ['us-east-1', 'eu-west-1'],
  readyDelayMs: 0,
  logLevel: 'silent',
  // minReadySeconds of sentinels would add 5 real seconds to the warm-up only; scale it away.
  sim: { minReadyScale: 0 },
  krane: { createWatcher: (o) => new Watcher(o) },
});
const sql = stack.ctrl.sql;

async function deployOnce(): Promise<number> {
  const t0 = performance.now();
  const r = await fetch(`${stack.ctrl.url}/v1/deployments`, {
    method: 'POST',
    headers: { authorization: `Bearer ${stack.adminToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ image: 'nginx:1.27', regions: ['us-east-1', 'eu-west-1'], replicas: 2 }),
  });
  const { id } = (await r.json()) as { id: string };
  for (;;) {
    const [row] = await sql<{ status: string; error: string | null }[]>`SELECT status, error FROM deployments WHERE id = ${id}`;
    if (row?.status === 'ready') return performance.now() - t0;
    if (row?.status === 'failed') throw new Error(`deploy failed: ${row.error}`);
    await new Promise((res) => setTimeout(res, POLL_MS));
  }
}

try {
  const warmup = await deployOnce();
  const samples: number[] = [];
  for (let i = 0; i < DEPLOYS; i++) samples.push(await deployOnce());
  console.log(
    JSON.stringify({
      bench: 'deploy',
      deploys: DEPLOYS,
      regions: 2,
      replicas: 2,
      readyDelayMs: 0,
      firstDeployWithSentinelsMs: Math.round(warmup),
      createToReadyMs: { p50: pct(samples, 50), p99: pct(samples, 99), min: Math.round(Math.min(...samples)), max: Math.round(Math.max(...samples)) },
      target: { p50Ms: 1000 },
    }),
  );
} finally {
  await stack.close();
  await pg.stop();
}

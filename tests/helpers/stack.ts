// The whole system in-process on a per-file test database: ctrl, and per region a kube-sim and
// a krane. Fast knobs: pods ready after a few ms, minReadySeconds scaled down, a short deploy
// re-check.
import { until } from './wait';
import { after } from 'node:test';
import { testDb, type TestDb } from './db';
import { startStack, type StackHandle, type StackOptions } from '../../src/modes/stack';
import { Watcher } from '../../src/sync/watcher';
import { KubeClient } from '../../src/kube/client';
import { SENTINEL_NAMESPACE } from '../../src/sync/wire';
import { pino } from 'pino';
import { basename } from 'node:path';
import { Writable } from 'node:stream';

export interface TestStack extends StackHandle {
  db: TestDb;
  /** The stack's last warnings and errors (a ring of RECENT_LINES), for a failed wait to show. */
  recentLog: string[];
  api(path: string, init?: { method?: string; body?: unknown; token?: string | null }): Promise<{ status: number; body: any }>;
}

/** `db`: run on this database instead of a fresh one of the shared server (tests/ha's clusters). */
export async function testStack(opts: Partial<StackOptions> & { db?: TestDb } = {}): Promise<TestStack> {
  const { db: given, ...rest } = opts;
  const db = given ?? (await testDb());
  const logDir = process.env.UNKEY_INFRA_TEST_LOG_DIR;
  // Opt-in diagnostics for a stall seen only in the full suite: the whole system's debug log,
  // one file per stack (named after the test file), instead of silence. Written synchronously,
  // so a process killed in the stall keeps its last lines; not redacted (test tokens are random).
  const recentLog: string[] = [];
  const logger = opts.logger ?? (logDir
    ? pino({ level: 'debug' }, pino.destination({ dest: `${logDir}/${basename(process.argv[1] ?? 'stack')}-${db.url.split('/').pop()}.ndjson`, mkdir: true, sync: true }))
    : ringLogger(recentLog));
  const stack = await startStack({
    logger,
    databaseUrl: db.url,
    regions: ['us-east-1', 'eu-west-1'],
    readyDelayMs: 20,
    logLevel: 'silent',
    sim: { minReadyScale: 0.001 },
    ...rest,
    ctrl: { recheckMs: 1000, ...opts.ctrl },
    // Reports retried quickly, so a ctrl restart costs the tests milliseconds, not the
    // production back-off of seconds.
    krane: {
      tuning: { minBackoffMs: 50, reporterRetryMs: 100, breakerResetMs: 500 },
      createWatcher: (o) => new Watcher({ ...o, backoffMinMs: 50, backoffMaxMs: 200 }),
      ...opts.krane,
    },
  });
  after(() => stack.close());
  return {
    ...stack,
    db,
    recentLog,
    async api(path, init = {}) {
      const headers: Record<string, string> = {};
      const token = init.token === undefined ? stack.adminToken : init.token;
      if (token) headers.authorization = `Bearer ${token}`;
      if (init.body !== undefined) headers['content-type'] = 'application/json';
      const r = await fetch(stack.ctrl.url + path, {
        method: init.method ?? (init.body !== undefined ? 'POST' : 'GET'),
        headers,
        ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
      });
      const text = await r.text();
      return { status: r.status, body: text ? JSON.parse(text) : null };
    },
  };
}

const RECENT_LINES = 30;

/**
 * Warnings and errors kept in memory: CI prints only a failed test's message, so a wait that
 * ran out there can say what the stack complained of (`whatWasSeen`). Lines are cut to 400
 * characters; the ring keeps the newest RECENT_LINES.
 */
function ringLogger(ring: string[]) {
  const sink = new Writable({
    write(chunk: Buffer, _enc, done) {
      // A failover logs the revocation listeners' reconnect warning by the thousand (seen in
      // tests/ha); kept, they would push every other line out of the ring.
      for (const line of chunk.toString().split('\n')) if (line && !line.includes('listener reconnected: ')) ring.push(line.slice(0, 400));
      ring.splice(0, Math.max(0, ring.length - RECENT_LINES));
      done();
    },
  });
  return pino({ level: 'warn' }, sink);
}

/** The one poller (tests/helpers/wait.ts), re-exported under the name the e2e tests import. */
export { until };

/** Waits until deployment `id` is in one of `statuses`; a wait that runs out says what it saw. */
export async function deploymentIn(stack: TestStack, id: string, statuses: string[], ms = 30_000): Promise<any> {
  try {
    return await until(async () => {
      const d = (await stack.api(`/v1/deployments/${id}`)).body;
      return statuses.includes(d.status) ? d : undefined;
    }, ms, `${id} in ${statuses.join('/')}`);
  } catch (err) {
    // A flake seen only in CI must explain itself: CI shows the failed test's message alone.
    throw new Error(`${(err as Error).message}; ${await whatWasSeen(stack, id)}`);
  }
}

/** The deployment calls the strategy tests share: create one (rolling unless a strategy is
 *  given) in `regions`, and wait until it is in one of `statuses`, returning its detail. */
export function deploymentsOf(stack: TestStack, regions: string[], waitMs = 30_000) {
  return {
    async create(strategy?: unknown): Promise<string> {
      // force: these files fail one image on purpose, test after test, and quarantine (which a
      // failed canary's image gets) is shown in tests/e2e/versions.test.ts, not here.
      const r = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions, replicas: 1, force: true, ...(strategy ? { strategy } : {}) } });
      if (r.status !== 202) throw new Error(`create answered ${r.status}: ${JSON.stringify(r.body)}`);
      return r.body.id;
    },
    status: (id: string, statuses: string[], ms = waitMs) => deploymentIn(stack, id, statuses, ms),
  };
}

/**
 * The deployment, its instances, its environment's sentinels, the regions, the workflows not
 * finished and the stack's recent warnings, as one line for an error.
 */
async function whatWasSeen(stack: TestStack, id: string): Promise<string> {
  try {
    const d = (await stack.api(`/v1/deployments/${id}`)).body;
    const instances = await stack.db.sql`SELECT region, status FROM instances WHERE deployment_id = ${id}`;
    const sentinels = await stack.db.sql`SELECT region, image, deploy_status, health, running_image, available_replicas, observed_at FROM sentinels WHERE environment_id = ${d?.environmentId ?? ''}`;
    const regions = await stack.db.sql`SELECT region, status, last_seen_at FROM region_liveness`;
    const workflows = await stack.db.sql`SELECT service, handler, object_key, status, attempts, lease_owner, round(extract(epoch FROM due_at - now()))::int AS due_in_s FROM engine_invocations WHERE status NOT IN ('completed', 'failed', 'cancelled') ORDER BY created_at LIMIT 20`;
    return JSON.stringify({ deployment: d, instances, sentinels, regions, workflows, log: stack.recentLog });
  } catch (err) {
    return `(could not read what was seen: ${String(err)})`;
  }
}

/** The weights of the environment's routes ConfigMap in a region, as `id:weight` strings
 *  ([] when the region has none), read through the unchanged client from its simulator. */
export async function routeWeights(stack: TestStack, region: string, environmentId = 'default'): Promise<string[]> {
  const api = new KubeClient(stack.regions.get(region)!.sim.sim.kubeConfig());
  const cm = await api.get({ apiVersion: 'v1', kind: 'ConfigMap', namespace: SENTINEL_NAMESPACE, name: `routes-${environmentId}` });
  if (!cm) return [];
  return JSON.parse((cm as { data: Record<string, string> }).data['routes.json']!).backends.map((b: { deploymentId: string; weight: number }) => `${b.deploymentId}:${b.weight}`);
}

/** Waits until a region's routes ConfigMap holds exactly `expected`. */
export const sameRoutesIn = (stack: TestStack, region: string, expected: string[], ms = 10_000) =>
  until(async () => JSON.stringify(await routeWeights(stack, region)) === JSON.stringify(expected), ms, `${region} routes ${expected.join(',') || 'none'}`);

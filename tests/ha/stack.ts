// The in-process stack (ctrl, and per region a simulator and krane) on an HA cluster's
// database, for tests/ha. Cleanup runs in the order that lets each part stop quickly: the stack
// first (ctrl hands back its leases and ends its sessions while the database is still there),
// then the test's own pool, the proxies, and the cluster last. A stack that fails to start
// still stops the cluster.
import { after } from 'node:test';
import type { HaCluster } from '../../scripts/ha/cluster';
import type { StackOptions } from '../../src/modes/stack';
import { createDb, type Sql } from '../../src/store';
import { Watcher } from '../../src/sync/watcher';
import { testStack, type TestStack } from '../helpers/stack';

export interface HaStack {
  stack: TestStack;
  /** The test's own pool, through HAProxy's primary port. */
  sql: Sql;
  /** Every feed watcher krane made (a restarted krane adds one); the last is the live one. */
  watchers: Watcher[];
}

export async function haStack(cluster: HaCluster, opts: Partial<StackOptions> & { closeFirst?: (() => Promise<unknown>)[] } = {}): Promise<HaStack> {
  const { closeFirst = [], ...rest } = opts;
  const sql = createDb(cluster.primaryUrl, { max: 2, applicationName: 'unkey-infra-test' });
  const watchers: Watcher[] = [];
  let stack: TestStack;
  try {
    stack = await testStack({
      db: { name: cluster.database, url: cluster.primaryUrl, adminUrl: cluster.nodes[0]!.url('postgres'), sql },
      ...rest,
      krane: {
        tuning: { minBackoffMs: 50, reporterRetryMs: 100, breakerResetMs: 500 },
        createWatcher: (o) => {
          const w = new Watcher({ ...o, backoffMinMs: 50, backoffMaxMs: 500 });
          watchers.push(w);
          return w;
        },
        ...rest.krane,
      },
    });
  } catch (err) {
    await sql.end({ timeout: 1 });
    for (const c of closeFirst) await c().catch(() => {});
    await cluster.stop();
    throw err;
  }
  // Registered after testStack's own hook (which closes the stack): node:test runs after
  // hooks in the order they were registered.
  after(async () => {
    await sql.end({ timeout: 1 });
    for (const c of closeFirst) await c().catch(() => {});
    await cluster.stop();
  });
  return { stack, sql, watchers };
}

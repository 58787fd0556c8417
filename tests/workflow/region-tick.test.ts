// The region status announcement decides and writes in one statement (issue 23): a tick that
// read a region as quiet must not announce `offline` over a heartbeat that landed between its
// read and its write. The heartbeat here holds its row lock while the tick runs, so the tick's
// read sees the old last_seen_at and its write has to wait for the heartbeat's commit: exactly
// the interleaving that used to leave a live region announced offline until the next tick.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { until } from '../helpers/wait';
import { pino } from 'pino';
import { testDb } from '../helpers/db';
import { agentTokens } from '../../src/store';
import { RegionRegistry } from '../../src/workflow/regions';

const db = await testDb();
const { sql } = db;

const status = async (region: string) => (await sql<{ status: string }[]>`SELECT status FROM region_liveness WHERE region = ${region}`)[0]?.status;

test('a tick does not announce offline over a heartbeat that committed after its read', async () => {
  await agentTokens.createAgentToken(sql, 'us-east-1');
  // Seen a minute ago and announced online: by its last read the region is offline.
  await sql`INSERT INTO region_liveness (region, last_seen_at, status) VALUES ('us-east-1', now() - interval '60 seconds', 'online')`;
  const registry = new RegionRegistry({ sql, logger: pino({ level: 'silent' }), offlineAfterMs: 30_000, offlineGraceMs: 60_000 });

  const heartbeat = sql.reserve();
  const hb = await heartbeat;
  try {
    await hb`BEGIN`;
    // Idle in its transaction while the tick waits on it: not to be ended by the shared test
    // server's 15 s limit on a slow machine (tests/run.ts).
    await hb`SET LOCAL idle_in_transaction_session_timeout = '60s'`;
    await hb`UPDATE region_liveness SET last_seen_at = now() WHERE region = 'us-east-1'`;
    const ticking = registry.tick();
    // The tick has read (the row lock does not block reads) and waits on the lock to write.
    await waitForLockWait();
    await hb`COMMIT`;
    await ticking;
  } finally {
    hb.release();
  }
  assert.equal(await status('us-east-1'), 'online', 'the heartbeat that committed last decides');

  // And the write still moves a region that really went quiet.
  await sql`UPDATE region_liveness SET last_seen_at = now() - interval '60 seconds' WHERE region = 'us-east-1'`;
  await registry.tick();
  assert.equal(await status('us-east-1'), 'offline');
  await registry.tick();
  await sql`UPDATE region_liveness SET last_seen_at = now() WHERE region = 'us-east-1'`;
  await registry.tick();
  assert.equal(await status('us-east-1'), 'online');
});

/** Positive evidence that another session waits on a row lock (the tick's UPDATE). */
async function waitForLockWait(): Promise<void> {
  await until(
    async () => {
      const [r] = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock'`;
      return r!.n > 0;
    },
    { what: "the tick waiting on the heartbeat's row lock" },
  );
}

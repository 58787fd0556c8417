// db_pool_acquire_seconds (the alert UnkeyDatabasePoolWaits) is how long a query waits for a
// pooled connection: near nothing with one free, and at least as long as the pool stays busy
// when none is. A pool of one connection, held by the test for 200 ms after the scrape began,
// makes a lower bound that no machine's speed can break: the scrape waited at least that long.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import client from 'prom-client';
import { testDb } from '../helpers/db';
import { createDb, registerPoolMetrics } from '../../src/store';

const db = await testDb();
const pool = createDb(db.url, { max: 1 });
after(() => pool.end({ timeout: 5 }));
const registry = new client.Registry();
/** How long the test keeps the pool's one connection: long enough to stand out from a free pool's wait. */
const HOLD_MS = 200;
registerPoolMetrics(registry, pool);
const acquire = async () => (await registry.getSingleMetricAsString('db_pool_acquire_seconds')).match(/^db_pool_acquire_seconds (\S+)$/m)![1]!;

test('with a free connection the wait is short; with the pool held it lasts until the release', async () => {
  await pool`SELECT 1`;
  assert.ok(Number(await acquire()) < 1, 'a free connection is taken at once');
  const held = await pool.reserve();
  const asked = performance.now();
  const scrape = acquire();
  await new Promise((r) => setTimeout(r, HOLD_MS));
  const releasedAfterMs = performance.now() - asked;
  held.release();
  const waited = Number(await scrape);
  assert.ok(waited * 1000 >= releasedAfterMs - 1, `waited ${waited} s, the pool was held ${releasedAfterMs} ms after the scrape began`);
});

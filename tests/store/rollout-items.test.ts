// sentinel_rollout_items (issue 28): the plan in SQL places sentinels exactly as the pure
// computeWaves does (a property over fleet sizes and wave lists), pages cover every row once,
// and a rollback's pages advance by marking rows reverted.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { testDb } from '../helpers/db';
import { rolloutItems, sentinels, withTx } from '../../src/store';
import { computeWaves } from '../../src/workflow/fleet/waves';

const db = await testDb();
const sql = db.sql;
const scope = { workspaceId: 'default', projectId: 'default', appId: 'default', environmentId: 'default' };

/** A fleet of `n` running sentinels on `image`, ids in a known order (regions make them distinct). */
async function fleet(n: number, image = 'sentinel:v1'): Promise<string[]> {
  await sql`DELETE FROM sentinels`;
  const ids = Array.from({ length: n }, (_, i) => `snt_${String(i).padStart(5, '0')}`);
  await withTx(sql, async (tx) => {
    for (const id of ids) await sentinels.ensureSentinel(tx, { id, ...scope, region: `r-${id.slice(4)}`, image, replicas: 1, cpuMillicores: 100, memoryMib: 128 });
  });
  return ids;
}

const percentages = fc
  .uniqueArray(fc.integer({ min: 1, max: 99 }), { maxLength: 4 })
  .map((p) => [...p.sort((a, b) => a - b), 100]);

test('the SQL plan places sentinels in the waves computeWaves computes, for any fleet size and wave list', async () => {
  await fc.assert(
    fc.asyncProperty(fc.integer({ min: 0, max: 60 }), percentages, async (n, p) => {
      const ids = await fleet(n);
      const rolloutId = `ro_${n}_${p.join('_')}`;
      const plan = await withTx(sql, (tx) => rolloutItems.planRollout(tx, rolloutId, 'sentinel:v2', p));
      const want = computeWaves(ids, p);
      assert.deepEqual(plan.waveSizes, want.map((w) => w.length));
      for (const [wave, members] of want.entries()) {
        assert.deepEqual(await rolloutItems.pendingInWave(sql, rolloutId, wave, 1000), members);
      }
      assert.equal(plan.alreadyOnImage, 0);
    }),
    { numRuns: 25, seed: 2811 },
  );
});

test('a new plan keeps only its own rows and counts the sentinels already on the image', async () => {
  const ids = await fleet(5);
  await withTx(sql, (tx) => rolloutItems.planRollout(tx, 'ro_old', 'sentinel:v2', [100]));
  await sql`UPDATE sentinels SET image = 'sentinel:v3' WHERE id = ${ids[0]!}`;
  const plan = await withTx(sql, (tx) => rolloutItems.planRollout(tx, 'ro_new', 'sentinel:v3', [50, 100]));
  assert.deepEqual(plan, { waveSizes: [2, 2], alreadyOnImage: 1 });
  const old = await sql<{ n: number }[]>`SELECT count(*)::int AS n FROM sentinel_rollout_items WHERE rollout_id = 'ro_old'`;
  assert.equal(old[0]!.n, 0);
});

test('outcomes, per-wave counts, keyset pages and rollback pages', async () => {
  const ids = await fleet(7);
  const rid = 'ro_pages';
  await withTx(sql, (tx) => rolloutItems.planRollout(tx, rid, 'sentinel:v2', [50, 100]));
  await rolloutItems.recordOutcomes(sql, rid, [
    { id: ids[0]!, status: 'READY', reason: null },
    { id: ids[1]!, status: 'FAILED', reason: 'did not converge' },
    { id: ids[2]!, status: 'SKIPPED', reason: 'region r offline' },
    { id: ids[3]!, status: 'READY', reason: null },
  ]);
  assert.deepEqual([...(await rolloutItems.waveCounts(sql, rid))], [
    { wave: 0, total: 4, succeeded: 2, failed: 1, skipped: 1, pending: 0 },
    { wave: 1, total: 3, succeeded: 0, failed: 0, skipped: 0, pending: 3 },
  ]);
  // Pages of two cover the fleet once, in id order.
  const seen: string[] = [];
  for (let after = ''; ; ) {
    const page = await rolloutItems.listItems(sql, rid, {}, after, 2);
    seen.push(...page.map((i) => i.sentinelId));
    if (page.length < 2) break;
    after = page[page.length - 1]!.sentinelId;
  }
  assert.deepEqual(seen, ids);
  assert.deepEqual((await rolloutItems.listItems(sql, rid, { status: 'FAILED' }, '', 10)).map((i) => [i.sentinelId, i.reason, i.previousImage]), [[ids[1], 'did not converge', 'sentinel:v1']]);
  assert.deepEqual((await rolloutItems.listItems(sql, rid, { wave: 1 }, '', 10)).map((i) => i.sentinelId), ids.slice(4));
  // Rollback: the succeeded ones, and the failed one only once its new image was written.
  assert.deepEqual((await rolloutItems.toRevert(sql, rid, 'sentinel:v2', 10)).map((x) => x.id), [ids[0], ids[3]]);
  await sql`UPDATE sentinels SET image = 'sentinel:v2' WHERE id = ${ids[1]!}`;
  const first = await rolloutItems.toRevert(sql, rid, 'sentinel:v2', 2);
  assert.deepEqual(first.map((x) => x.id), [ids[0], ids[1]]);
  await rolloutItems.markReverted(sql, rid, first.map((x) => x.id));
  assert.deepEqual((await rolloutItems.toRevert(sql, rid, 'sentinel:v2', 2)).map((x) => [x.id, x.previousImage]), [[ids[3], 'sentinel:v1']]);
});

// postgres.js hands a statement the idle connection that was used last, not the one idle
// longest (scripts/patch-postgres.mjs's fifth patch, a choice and not a defect): a lone
// invocation's statements, one after another, then run on one warm backend instead of waking
// each of the pool's backends in turn. The order is exact: every connection is opened by
// statements running together, then statements go one at a time and name the backend they ran on.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import postgres from 'postgres';
import { testDb } from '../helpers/db';
import { createDb } from '../../src/store';

const db = await testDb();

for (const [name, open] of [
  ['postgres.js', (url: string) => postgres(url, { max: 4, onnotice: () => {} })],
  ["the project's createDb", (url: string) => createDb(url, { max: 4 })],
] as const) {
  test(`${name}: statements one after another reuse the connection used last`, async () => {
    const sql = open(db.url) as ReturnType<typeof postgres>;
    try {
      // Four at once: each on a connection of its own (none is free to wait behind).
      const opened = await Promise.all([0, 1, 2, 3].map(() => sql<{ pid: number }[]>`SELECT pg_backend_pid() AS pid, pg_sleep(0.05)`));
      assert.equal(new Set(opened.map(([r]) => r!.pid)).size, 4, 'four connections are open');
      const pids: number[] = [];
      for (let i = 0; i < 8; i++) pids.push((await sql<{ pid: number }[]>`SELECT pg_backend_pid() AS pid`)[0]!.pid);
      assert.equal(pids.length, 8);
      assert.deepEqual(new Set(pids).size, 1, `one backend served them all, not a rotation: ${pids.join(', ')}`);
    } finally {
      await sql.end({ timeout: 1 });
    }
  });
}

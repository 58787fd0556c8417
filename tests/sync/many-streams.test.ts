import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { testDb } from '../helpers/db';
import { TOKENS, countingDb, deployTo, sleep, startFeedServer, waitFor } from './helpers';

const db = await testDb();
const counted = countingDb(db.url);
// Polls end every second, so the windows below include a thousand reconnects per second. All
// the streams share one token here, so its stream limit is lifted.
const server = await startFeedServer(db.url, { sql: counted.sql, waitLimitMs: 1_000, heartbeatMs: 400, pollMs: 100, maxStreamsPerToken: 2_000 });
after(() => server.close());

/** Long-poll loops like krane's: read to `end`, reconnect with its cursor, until stopped. */
function agents(n: number, cursor: string) {
  let stop = false;
  let polls = 0;
  let errors = 0;
  const reasons = new Set<string>();
  /** Resource ids each agent has seen, one set per agent. */
  const seen = Array.from({ length: n }, () => new Set<string>());
  const loops = seen.map(async (changes) => {
    let c = cursor;
    while (!stop) {
      try {
        const res = await fetch(`${server.url}/v1/cluster/changes?cursor=${encodeURIComponent(c)}`, { headers: { authorization: `Bearer ${TOKENS['us-east-1']}` } });
        const lines = (await res.text()).split('\n').filter(Boolean).map((l) => JSON.parse(l));
        const end = lines.at(-1);
        if (res.status !== 200 || end?.type !== 'end') throw new Error(`poll ended with ${res.status} ${JSON.stringify(end)}`);
        for (const l of lines) if (l.type === 'change') changes.add(l.resource.id);
        c = end.cursor;
        polls++;
      } catch (err) {
        if (reasons.size < 5) reasons.add(`${(err as Error).message} ${String((err as { cause?: Error }).cause?.message ?? "")} ${String((err as { cause?: { code?: string } }).cause?.code ?? "")}`.slice(0, 200));
        errors++;
        await sleep(100);
      }
    }
  });
  return {
    /** How many of the agents have seen the resource. */
    seenBy: (id: string) => seen.filter((s) => s.has(id)).length,
    polls: () => polls,
    errors: () => errors,
    reasons: () => [...reasons],
    async stop() {
      stop = true;
      await Promise.all(loops);
    },
  };
}

async function xactCommits(): Promise<number> {
  const [r] = await db.sql<{ n: string }[]>`SELECT xact_commit::text AS n FROM pg_stat_database WHERE datname = current_database()`;
  return Number(r!.n);
}

/** Statements the feed sent per second over `ms`, with the agents connected. */
async function measure(ms: number) {
  const q0 = counted.count();
  const x0 = await xactCommits();
  const t0 = Date.now();
  await sleep(ms);
  const secs = (Date.now() - t0) / 1000;
  return { queriesPerSec: (counted.count() - q0) / secs, xactPerSec: ((await xactCommits()) - x0) / secs };
}

test('1,000 concurrent long-poll streams on one ctrl cost the same database load as 10', async (t) => {
  const first = await fetch(`${server.url}/v1/cluster/changes?wait=0.1`, { headers: { authorization: `Bearer ${TOKENS['us-east-1']}` } });
  const snapEnd = (await first.text()).split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((l) => l.type === 'snapshot_end');

  const few = agents(10, snapEnd.cursor);
  await sleep(1_500);
  const load10 = await measure(4_000);
  await few.stop();

  const many = agents(1_000, snapEnd.cursor);
  await sleep(2_500);
  const load1000 = await measure(4_000);
  // The streams still work: a change reaches every one of them.
  const dep = await deployTo(db.sql, 'us-east-1');
  try {
    await waitFor(() => many.seenBy(dep) === 1_000, 60_000, 'the change reached all 1,000 streams');
  } catch (err) {
    throw new Error(`${(err as Error).message}: seen by ${many.seenBy(dep)}, polls ${many.polls()}, errors ${many.errors()} (${many.reasons().join('; ')})`);
  } finally {
    await many.stop();
  }
  const polls = many.polls();
  const errors = many.errors();
  t.diagnostic(`10 streams: ${JSON.stringify(load10)}; 1000 streams: ${JSON.stringify(load1000)}; polls ${polls}, errors ${errors}`);

  assert.equal(errors, 0, many.reasons().join('; '));
  // More polls than streams: the streams kept ending and reconnecting during the windows.
  assert.ok(polls > 1_000, `streams reconnected continuously (${polls} polls)`);
  // Database load is the tailer's poll rate (10/s at pollMs 100) plus nothing per stream: a
  // per-stream query would add ~1,000/s here.
  assert.ok(load1000.queriesPerSec <= load10.queriesPerSec * 1.5 + 5, `independent of stream count: ${load10.queriesPerSec} vs ${load1000.queriesPerSec}`);
  assert.ok(load1000.queriesPerSec <= 20, `bounded by the poll rate: ${load1000.queriesPerSec}/s`);
  // The same seen from the server: transactions committed in this database (the tailer's
  // polls, this test's own reads) do not grow with the stream count either.
  assert.ok(load1000.xactPerSec <= load10.xactPerSec * 1.5 + 5, `commits independent of stream count: ${load10.xactPerSec} vs ${load1000.xactPerSec}`);
});

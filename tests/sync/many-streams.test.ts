// Many concurrent long-poll streams on one ctrl: every stream gets a change, and the database
// hears from the tailer alone, whatever the number of streams (no query per stream or per
// poll). Counted, not timed: the window is "every stream was served twice", and what is
// compared is the feed pool's statements against the tailer's own polls in that window, so a
// slow machine changes how long it takes, not what is counted. How fast and how many (1,000
// and 10,000 agents, statements per second, p99 propagation) is bench:feed's question
// (docs/benchmarks.md), not a test's.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { testDb } from '../helpers/db';
import { TOKENS, countingDb, deployTo, sleep, startFeedServer, waitFor } from './helpers';

/** Streams in the big run: enough that one statement per stream poll would be 2 × 200 extra
 *  statements in the window against the tailer's handful, small enough that a loaded 2-core
 *  machine serves their reconnects (the reconnect rate is STREAMS / wait limit). */
const STREAMS = 200;
/** The tailer's poll period here. */
const POLL_MS = 100;
/** Between reconnects after a failed poll, as krane backs off. */
const RETRY_MS = 100;

const db = await testDb();
const counted = countingDb(db.url);
// Polls end every 2 s, so the windows below include hundreds of reconnects. All the streams
// share one token here, so its stream limit is lifted.
const server = await startFeedServer(db.url, { sql: counted.sql, waitLimitMs: 2_000, heartbeatMs: 400, pollMs: POLL_MS, maxStreamsPerToken: 2_000 });
after(() => server.close());

/** Long-poll loops like krane's: read to `end`, reconnect with its cursor, until stopped. */
function agents(n: number, cursor: string) {
  let stop = false;
  let errors = 0;
  const reasons = new Set<string>();
  /** Per agent: resource ids seen, and polls completed. */
  const seen = Array.from({ length: n }, () => ({ ids: new Set<string>(), polls: 0 }));
  const loops = seen.map(async (agent) => {
    let c = cursor;
    while (!stop) {
      try {
        const res = await fetch(`${server.url}/v1/cluster/changes?cursor=${encodeURIComponent(c)}`, { headers: { authorization: `Bearer ${TOKENS['us-east-1']}` } });
        const lines = (await res.text()).split('\n').filter(Boolean).map((l) => JSON.parse(l));
        const end = lines.at(-1);
        if (res.status !== 200 || end?.type !== 'end') throw new Error(`poll ended with ${res.status} ${JSON.stringify(end)}`);
        for (const l of lines) if (l.type === 'change') agent.ids.add(l.resource.id);
        c = end.cursor;
        agent.polls++;
      } catch (err) {
        if (reasons.size < 5) reasons.add(`${(err as Error).message} ${String((err as { cause?: { code?: string } }).cause?.code ?? '')}`.slice(0, 200));
        errors++;
        await sleep(RETRY_MS);
      }
    }
  });
  return {
    seenBy: (id: string) => seen.filter((s) => s.ids.has(id)).length,
    /** The fewest polls any agent has completed. */
    minPolls: () => Math.min(...seen.map((s) => s.polls)),
    polls: () => seen.reduce((a, s) => a + s.polls, 0),
    errors: () => errors,
    reasons: () => [...reasons],
    async stop() {
      stop = true;
      await Promise.all(loops);
    },
  };
}

/** Statements the feed's pool sent and tailer polls over a window that ends once every agent
 *  has completed `rounds` more polls; what is not a tailer poll is the rest (auth, settle). */
async function window(a: ReturnType<typeof agents>, rounds: number) {
  const q0 = counted.count();
  const t0 = server.feed.tailer.polls;
  const started = Date.now();
  const p0 = a.polls();
  const target = a.minPolls() + rounds;
  await waitFor(() => a.minPolls() >= target, { what: `every stream served ${rounds} more times`, show: () => ({ minPolls: a.minPolls(), errors: a.errors(), reasons: a.reasons() }) });
  const tail = server.feed.tailer.polls - t0;
  return { statements: counted.count() - q0, tailerPolls: tail, streamPolls: a.polls() - p0, other: counted.count() - q0 - tail, ms: Date.now() - started };
}

test(`${STREAMS} concurrent long-poll streams cost the database what 10 do: the tailer's polls, nothing per stream`, async (t) => {
  const first = await fetch(`${server.url}/v1/cluster/changes?wait=0.1`, { headers: { authorization: `Bearer ${TOKENS['us-east-1']}` } });
  const snapEnd = (await first.text()).split('\n').filter(Boolean).map((l) => JSON.parse(l)).find((l) => l.type === 'snapshot_end');

  const few = agents(10, snapEnd.cursor);
  await waitFor(() => few.minPolls() >= 1, { what: 'the 10 streams connected and served' });
  const load10 = await window(few, 2);
  await few.stop();

  const many = agents(STREAMS, snapEnd.cursor);
  await waitFor(() => many.minPolls() >= 1, { what: `the ${STREAMS} streams connected and served`, show: () => ({ minPolls: many.minPolls(), errors: many.errors(), reasons: many.reasons() }) });
  const loadMany = await window(many, 2);
  // The streams still work: a change reaches every one of them.
  const dep = await deployTo(db.sql, 'us-east-1');
  try {
    await waitFor(() => many.seenBy(dep) === STREAMS, { what: `the change reached all ${STREAMS} streams`, show: () => ({ seenBy: many.seenBy(dep), errors: many.errors(), reasons: many.reasons() }) });
  } finally {
    await many.stop();
  }
  t.diagnostic(`10 streams: ${JSON.stringify(load10)}; ${STREAMS} streams: ${JSON.stringify(loadMany)}; errors ${many.errors()}`);

  assert.equal(many.errors(), 0, many.reasons().join('; '));
  assert.ok(loadMany.streamPolls >= 2 * STREAMS, `the window served every stream twice: ${loadMany.streamPolls} polls`);
  // A statement per stream poll would make `other` at least streamPolls (400 and more); the
  // tailer's polls are counted apart, since how many fit in the window depends on its length.
  assert.ok(loadMany.other <= loadMany.streamPolls / 20, `statements beside the tailer's: ${loadMany.other} for ${loadMany.streamPolls} stream polls`);
  assert.ok(loadMany.other / loadMany.streamPolls <= load10.other / load10.streamPolls + 0.05, `per stream poll, ${STREAMS} streams cost no more than 10: ${JSON.stringify({ load10, loadMany })}`);
  // And the tailer polls on its timer, not per stream: at most one poll per POLL_MS of the
  // window (a slow machine only makes fewer), where one per stream poll would be hundreds.
  assert.ok(loadMany.tailerPolls <= loadMany.ms / POLL_MS + 5, `${loadMany.tailerPolls} tailer polls in ${loadMany.ms} ms`);
});

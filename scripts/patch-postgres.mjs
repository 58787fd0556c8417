// Patches postgres.js (porsager, 3.4.9, the newest release) where its transactions break under
// load or when their connection closes, where a failed statement corrupts the next answer, and
// where a connection closed during its startup leaves its query waiting; run by `npm ci`
// (postinstall) and by scripts/build.mjs, idempotent patch by patch (an install carrying the
// earlier patches gets the later ones).
//
// The defect (porsager/postgres#823, #1189; fixes proposed in #1207 and #1218, unmerged): a
// transaction's BEGIN is written to a connection, but the hook that reserves the connection for
// the transaction (onexecute) is skipped when the BEGIN fills that connection's pipeline
// (max_pipeline) or the socket's buffer, since it is the last term of an && chain. sql.begin
// then fails with UNSAFE_TRANSACTION, and worse, the server stays inside the open transaction
// while the connection goes back to the pool: unrelated statements run in it, hold their locks
// and are never committed. Likewise a socket 'drain' returned a reserved connection to the pool
// between a transaction's statements. The 10,000-sentinel rollout hit the first; the test is
// tests/store/pg-driver.test.ts (the BEGIN; the drain race needs a socket buffer filling at
// the wrong instant and has no deterministic test).
//
// The patch: reserve whenever the BEGIN was written, and never hand a reserved connection to
// the pool on drain.
//
// The second defect (porsager/postgres#1154, #1186, #1216; fixes proposed in #1155, #1209 and
// #1215, unmerged): a transaction whose connection closes (its backend terminated, a database
// failover) rejects sql.begin(), but its callback goes on. Its next statement was written to a
// connection with no socket, from a setImmediate, and the TypeError took the whole process down
// (bench:failover died at the switchover); or, once the pool had reconnected that connection,
// the statement ran on the new session outside any transaction, and so did a late COMMIT. The
// patch: a transaction remembers that its connection closed and rejects every later statement
// of it (and those it had queued) with that error; a write that finds no socket fails the
// connection's queries instead of throwing; and a closed session's last query and error are
// cleared, so the reconnected session's first query does not get the old backend's FATAL (an
// unhandled rejection once the crash above was fixed); a session that dies while postgres.js
// fetches its array types no longer leaves that promise's rejection unhandled (fatal in Node).
// Test: tests/store/pg-driver-close.test.ts.
//
// The third defect (porsager/postgres#1119 and #1181, open; fixes proposed in #1120 and #1190,
// unmerged; #795 is likely the same seen in the wild): the row index of a connection's answer
// is reset only when a statement completes. A statement that sends rows and then fails (a
// division by zero on a later row, a statement timeout, a batch one of whose values is refused)
// never completes, so the next answer on that connection is written from where the failed one
// stopped: leading holes and a length that counts them, with no error. The engine's group
// commit met it first. The patch resets the index with the rest of the answer's state at
// ReadyForQuery, which ends every statement (each is followed by its own Sync) and comes before
// the next one's rows, pipelined or not; resetting when the next statement is written (#1120)
// would corrupt an answer still arriving ahead of it in the pipeline. Test:
// tests/store/pg-driver.test.ts (a statement failing on its fourth row, then another, in turn and
// pipelined).
//
// The fourth defect (porsager/postgres#1193; a fix proposed in #1214, unmerged): a server that
// closes a new connection cleanly (FIN, no error) before its startup completes left the query
// waiting for that connection pending for ever, while the connection reconnected at once, in a
// loop with no delay. HAProxy does that on a port with no server up: ctrl's full syncs on
// --database-read-url hung for good once the only standby had been promoted (bench:failover).
// The patch: with no other host to try, the waiting query fails with CONNECTION_CLOSED and the
// connection goes back to the pool like any closed one (multi-host URLs keep cycling their
// hosts, as upstream does). Test: tests/store/pg-driver-startup-close.test.ts.
//
// The fifth is a choice, not a defect: the pool hands a statement the idle connection used last
// (LIFO) rather than the one idle longest (FIFO, upstream's). With FIFO a lone invocation's
// statements, one after another, went round all of the pool's backends, each woken cold; with
// LIFO they stay on one warm backend. Measured side by side with Restate (bench:engine
// --compare restate, five interleaved pairs, a private copy of the package, 29 Nov): 10-step
// p50 5.17-5.84 -> 4.08-5.33 ms (medians 5.59 -> 4.63), 0-step 0.72-0.78 -> 0.55-0.66 ms, 50
// callers on distinct keys 1,501-1,624 -> 1,599-1,930 a second. A transaction's BEGIN takes its
// connection the same way (the one used last); sql.reserve() still takes the one idle longest.
// Connections idle at the back of the queue still end by max_lifetime; were idle_timeout set
// (it is not), LIFO would let the pool shrink to what the load needs. Test:
// tests/store/pg-driver-lifo.test.ts.
//
// When a postgres.js upgrade changes these lines the script fails, so the upgrade is reviewed
// against the upstream fixes instead of silently shipping unpatched.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const MARK = 'unkey-infra patch';
/** Each patch: the file it changes (in each of the three copies), the code it replaces, and the
 *  code it puts there (which names the MARK, so a patch is applied once). */
const PATCHES = [
  {
    file: 'connection.js',
    from: `      return write(toBuffer(q))
        && !q.describeFirst
        && !q.cursorFn
        && sent.length < max_pipeline
        && (!q.options.onexecute || q.options.onexecute(connection))`,
    to: `      const written = write(toBuffer(q))
      // ${MARK} (porsager/postgres#823): a written BEGIN always reserves its connection.
      q.options.onexecute && q.options.onexecute(connection)
      return written
        && !q.describeFirst
        && !q.cursorFn
        && sent.length < max_pipeline
        && !q.options.onexecute`,
  },
  {
    file: 'connection.js',
    from: `  function drain() {
    !query && onopen(connection)
  }`,
    to: `  function drain() {
    // ${MARK} (porsager/postgres#823, as #1207): a reserved connection is its transaction's, not the pool's.
    !query && !connection.reserved && onopen(connection)
  }`,
  },
  {
    file: 'connection.js',
    from: `  function nextWrite(fn) {
    const x = socket.write(chunk, fn)`,
    to: `  function nextWrite(fn) {
    // ${MARK} (porsager/postgres#1154, as #1209): no socket, the connection closed: its queries fail, nothing throws.
    if (!socket) {
      chunk = nextWriteTimer = null
      error(Errors.connection('CONNECTION_CLOSED', options))
      return false
    }
    const x = socket.write(chunk, fn)`,
  },
  {
    file: 'connection.js',
    from: `    !hadError && (query || sent.length) && error(Errors.connection('CONNECTION_CLOSED', options, socket))`,
    to: `    !hadError && (query || sent.length) && error(Errors.connection('CONNECTION_CLOSED', options, socket))
    // ${MARK} (porsager/postgres#1215): the next session starts clean; no query, answer or error of this one carries over.
    query && queryError(query, Errors.connection('CONNECTION_CLOSED', options))
    query = results = errorResponse = null
    result = new Result()`,
  },
  {
    file: 'connection.js',
    from: `  async function fetchArrayTypes() {
    needsTypes = false
    const types = await new Query([`,
    to: `  async function fetchArrayTypes() {
    needsTypes = false
    // ${MARK}: a session that dies while it fetches the types (a failover) fetches them on the
    // next one; the rejection was unhandled and, in Node, fatal. Its first query is retried on reconnect.
    const types = await fetchTypesQuery().catch(() => (needsTypes = true, null))
    types && types.forEach(({ oid, typarray }) => addArrayType(oid, typarray))
  }

  function fetchTypesQuery() {
    return new Query([`,
  },
  {
    file: 'connection.js',
    from: `    \`], [], execute)
    types.forEach(({ oid, typarray }) => addArrayType(oid, typarray))
  }`,
    to: `    \`], [], execute)
  }`,
  },
  {
    file: 'index.js',
    from: `    let savepoints = 0
      , connection
      , prepare = null`,
    to: `    let savepoints = 0
      , connection
      , prepare = null
      // ${MARK} (porsager/postgres#1216, as #1215): set when this transaction's connection closed.
      , closedError = null`,
  },
  {
    file: 'index.js',
    from: `        new Promise((_, reject) => connection.onclose = reject)`,
    to: `        new Promise((_, reject) => connection.onclose = (e) => {
          // ${MARK} (porsager/postgres#1186): statements queued in the transaction fail with it.
          closedError = e
          while (queries.length) queries.shift().reject(e)
          reject(e)
        })`,
  },
  {
    file: 'index.js',
    from: `      function handler(q) {
        q.catch(e => uncaughtError || (uncaughtError = e))
        c.queue === full`,
    to: `      function handler(q) {
        q.catch(e => uncaughtError || (uncaughtError = e))
        // ${MARK} (porsager/postgres#1216): never on a closed or reconnected session, outside the transaction.
        if (closedError)
          return q.reject(closedError)
        c.queue === full`,
  },
  {
    file: 'connection.js',
    from: `    query = results = errorResponse = null
    result = new Result()
    connectTimer.cancel()`,
    to: `    query = results = errorResponse = null
    result = new Result()
    // ${MARK} (porsager/postgres#1119): a statement that failed after sending rows never
    // completed, so its row index must not carry into the next answer.
    rows = 0
    connectTimer.cancel()`,
  },
  {
    file: 'connection.js',
    from: `    if (initial)
      return reconnect()`,
    to: `    // ${MARK} (porsager/postgres#1193): a clean close during startup fails the waiting query
    // when there is no other host to try, instead of reconnecting at once for ever.
    !hadError && initial && error(Errors.connection('CONNECTION_CLOSED', options))
    if (initial)
      return reconnect()`,
  },
  {
    file: 'queue.js',
    from: `    push: (x) => (xs.push(x), x),`,
    to: `    push: (x) => (xs.push(x), x),
    // ${MARK}: the entry pushed last, for the pool's LIFO hand-out (index.js).
    pop: () => {
      if (xs.length === index)
        return undefined
      const out = xs.pop()
      if (xs.length === index) {
        index = 0
        xs = []
      }
      return out
    },`,
  },
  {
    file: 'index.js',
    from: `    if (open.length)
      return go(open.shift(), query)`,
    to: `    // ${MARK}: the idle connection used last (LIFO), warm, not the one idle longest.
    if (open.length)
      return go(open.pop(), query)`,
  },
];

/** Applies every patch not yet applied to the three copies (ESM, CommonJS, Cloudflare);
 *  returns the files changed. */
export function patchPostgres(root = join(dirname(fileURLToPath(import.meta.url)), '..')) {
  const changed = [];
  for (const variant of ['src', 'cjs/src', 'cf/src']) {
    for (const name of new Set(PATCHES.map((p) => p.file))) {
      const file = join(root, 'node_modules', 'postgres', variant, name);
      if (!existsSync(file)) throw new Error(`patch-postgres: ${file} is missing (is postgres installed?)`);
      let text = readFileSync(file, 'utf8');
      const before = text;
      for (const p of PATCHES.filter((x) => x.file === name)) {
        if (text.includes(p.to)) continue;
        if (!text.includes(p.from)) throw new Error(`patch-postgres: ${file} no longer has the code this patch replaces; review scripts/patch-postgres.mjs against the installed postgres version`);
        text = text.replace(p.from, p.to);
      }
      if (text === before) continue;
      writeFileSync(file, text);
      changed.push(file);
    }
  }
  return changed;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const changed = patchPostgres();
  if (changed.length) console.log(`patch-postgres: patched ${changed.length} file(s)`);
}

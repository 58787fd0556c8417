// Patches postgres.js (porsager, 3.4.9, the newest release) where its transactions break under
// load and where a failed statement corrupts the next answer; run by `npm ci` (postinstall) and
// by scripts/build.mjs, idempotent patch by patch (an install carrying the earlier patches gets
// the later ones).
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
// When a postgres.js upgrade changes these lines the script fails, so the upgrade is reviewed
// against the upstream fixes instead of silently shipping unpatched.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const MARK = 'unkey-infra patch';
const PATCHES = [
  {
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
    from: `  function drain() {
    !query && onopen(connection)
  }`,
    to: `  function drain() {
    // ${MARK} (porsager/postgres#823, as #1207): a reserved connection is its transaction's, not the pool's.
    !query && !connection.reserved && onopen(connection)
  }`,
  },
  {
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
];

/** Patches the three copies (ESM, CommonJS, Cloudflare); returns the files changed. */
export function patchPostgres(root = join(dirname(fileURLToPath(import.meta.url)), '..')) {
  const changed = [];
  for (const variant of ['src', 'cjs/src', 'cf/src']) {
    const file = join(root, 'node_modules', 'postgres', variant, 'connection.js');
    if (!existsSync(file)) throw new Error(`patch-postgres: ${file} is missing (is postgres installed?)`);
    const before = readFileSync(file, 'utf8');
    let text = before;
    for (const p of PATCHES) {
      if (text.includes(p.to)) continue;
      if (!text.includes(p.from)) throw new Error(`patch-postgres: ${file} no longer has the code this patch replaces; review scripts/patch-postgres.mjs against the installed postgres version`);
      text = text.replace(p.from, p.to);
    }
    if (text === before) continue;
    writeFileSync(file, text);
    changed.push(file);
  }
  return changed;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const changed = patchPostgres();
  if (changed.length) console.log(`patch-postgres: patched ${changed.length} file(s)`);
}

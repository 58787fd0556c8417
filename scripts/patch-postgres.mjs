// Patches postgres.js (porsager, 3.4.9, the newest release) where its transactions break under
// load; run by `npm ci` (postinstall) and by scripts/build.mjs, idempotent.
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
// the pool on drain. When a postgres.js upgrade changes these lines the script fails, so the
// upgrade is reviewed against the upstream fix instead of silently shipping unpatched.
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
];

/** Patches the three copies (ESM, CommonJS, Cloudflare); returns the files changed. */
export function patchPostgres(root = join(dirname(fileURLToPath(import.meta.url)), '..')) {
  const changed = [];
  for (const variant of ['src', 'cjs/src', 'cf/src']) {
    const file = join(root, 'node_modules', 'postgres', variant, 'connection.js');
    if (!existsSync(file)) throw new Error(`patch-postgres: ${file} is missing (is postgres installed?)`);
    let text = readFileSync(file, 'utf8');
    if (text.includes(MARK)) continue;
    for (const p of PATCHES) {
      if (!text.includes(p.from)) throw new Error(`patch-postgres: ${file} no longer has the code this patch replaces; review scripts/patch-postgres.mjs against the installed postgres version`);
      text = text.replace(p.from, p.to);
    }
    writeFileSync(file, text);
    changed.push(file);
  }
  return changed;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const changed = patchPostgres();
  if (changed.length) console.log(`patch-postgres: patched ${changed.length} file(s)`);
}

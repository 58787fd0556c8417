// system_state: cluster-wide facts kept in one row (the feed epoch and the history it belongs to).
import type { Queryable } from './db';

export async function getFeedEpoch(q: Queryable): Promise<string> {
  const [row] = await q<{ feedEpoch: string }[]>`SELECT feed_epoch FROM system_state`;
  if (!row) throw new Error('system_state row missing: migrations not applied?');
  return row.feedEpoch;
}

/**
 * Ties the feed epoch to the database's history (sql/0030_feed_history.sql): when the history
 * the epoch was issued in is not this one (a promoted standby, a point-in-time restore, another
 * cluster), a new epoch is issued with the current history, so every cursor handed out before
 * is refused (410) and agents full-sync. True when it issued one. Run on the primary only (a
 * standby's history is unknown to SQL); concurrent callers are safe: the row lock orders them
 * and the second finds the history already current.
 */
export async function fenceFeed(q: Queryable): Promise<boolean> {
  const rows = await q`
    UPDATE system_state SET feed_epoch = substr(md5(random()::text || clock_timestamp()::text), 1, 12), feed_history = unkey_feed_history()
    WHERE feed_history IS DISTINCT FROM unkey_feed_history() RETURNING feed_epoch`;
  return rows.length > 0;
}

/** Starts a new feed timeline (after a restore): every agent cursor becomes invalid. */
export async function rotateFeedEpoch(q: Queryable): Promise<string> {
  const [row] = await q<{ feedEpoch: string }[]>`
    UPDATE system_state SET feed_epoch = substr(md5(random()::text || clock_timestamp()::text), 1, 12) RETURNING feed_epoch`;
  return row!.feedEpoch;
}

/** A backend holding an open transaction, as pg_stat_activity shows it (never its query text,
 *  which may carry data). */
export interface OpenTransaction {
  pid: number;
  applicationName: string;
  user: string | null;
  database: string | null;
  state: string | null;
  xactStart: Date | null;
}

/**
 * The backend whose transaction has the oldest transaction id still running anywhere on the
 * server: the one that holds pg_snapshot_xmin, and so the change feed's settled horizon, back.
 */
export async function oldestOpenTransaction(q: Queryable): Promise<OpenTransaction | undefined> {
  const [row] = await q<OpenTransaction[]>`
    SELECT pid, application_name, usename AS user, datname AS database, state, xact_start
    FROM pg_stat_activity
    WHERE backend_xid IS NOT NULL AND pid <> pg_backend_pid()
    ORDER BY age(backend_xid) DESC LIMIT 1`;
  return row;
}

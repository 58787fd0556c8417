// system_state: cluster-wide facts kept in one row.
import type { Queryable } from './db';

export async function getFeedEpoch(q: Queryable): Promise<string> {
  const [row] = await q<{ feedEpoch: string }[]>`SELECT feed_epoch FROM system_state`;
  if (!row) throw new Error('system_state row missing: migrations not applied?');
  return row.feedEpoch;
}

/** Starts a new feed timeline (after a restore): every agent cursor becomes invalid. */
export async function rotateFeedEpoch(q: Queryable): Promise<string> {
  const [row] = await q<{ feedEpoch: string }[]>`
    UPDATE system_state SET feed_epoch = substr(md5(random()::text || clock_timestamp()::text), 1, 12) RETURNING feed_epoch`;
  return row!.feedEpoch;
}

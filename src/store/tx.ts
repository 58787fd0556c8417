// Runs a write in a transaction: the caller's if it passes one, else a fresh one. Store
// functions that write a state row and its outbox row use this, so both land together even
// when a caller forgets to open a transaction.
import type { Queryable, TxSql, Sql } from './db';

export function isTx(q: Queryable): q is TxSql {
  return !('begin' in q);
}

export function inTx<T>(q: Queryable, fn: (tx: TxSql) => Promise<T>): Promise<T> {
  if (isTx(q)) return fn(q);
  return (q as Sql).begin((tx) => fn(tx)) as Promise<T>;
}

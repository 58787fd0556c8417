// The PostgreSQL client. Result columns come back camelCased (postgres.toCamel), so store
// functions return plain typed objects; statements still name columns in snake_case.
import postgres from 'postgres';

export type Sql = postgres.Sql<Record<string, unknown>>;
export type TxSql = postgres.TransactionSql<Record<string, unknown>>;
/** Anything a store function can run on: the pool or an open transaction. */
export type Queryable = Sql | TxSql;

export interface DbOptions {
  /** Pool size. Ten is ample for one ctrl: long polls are served from memory, not held queries. */
  max?: number;
  /** Application name shown in pg_stat_activity, to tell ctrl, krane tools and tests apart. */
  applicationName?: string;
}

export function createDb(url: string, opts: DbOptions = {}): Sql {
  return postgres(url, {
    max: opts.max ?? 10,
    // Notices (e.g. "relation already exists, skipping") are noise in our logs.
    onnotice: () => {},
    transform: { column: { from: postgres.toCamel } },
    connection: { application_name: opts.applicationName ?? 'unkey-infra' },
    // bigint ids (outbox) must not lose precision as JS numbers; strings are exact.
    types: {},
    // Fail fast when the database is unreachable: /readyz must answer, not hang.
    connect_timeout: 5,
  }) as unknown as Sql;
}

/** Runs `fn` in one transaction; rolls back on throw. */
export function withTx<T>(sql: Sql, fn: (tx: TxSql) => Promise<T>): Promise<T> {
  return sql.begin((tx) => fn(tx)) as Promise<T>;
}

export async function ping(sql: Sql): Promise<void> {
  await sql`SELECT 1`;
}

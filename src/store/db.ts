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
  /**
   * `url` is a pooler in transaction mode (PgBouncer) and this is a direct session to the
   * primary: LISTEN goes here (through the pooler a session lasts one transaction, so a LISTEN
   * made through it hears nothing afterwards), and the pool talks to the pooler the way it
   * needs (see `pooled` below). Queries, transactions and NOTIFY go through `url`.
   */
  listenUrl?: string;
}

/**
 * How the pool talks to a pooler in transaction mode, where each transaction may get another
 * server session: no named prepared statements (a statement prepared on one session does not
 * exist on the next; PgBouncer 1.18, Debian 12's, cannot carry them), and no pipelining.
 * postgres.js writes a query behind one still running on the same connection; when the first
 * ends, PgBouncer hands its server session back to the pool while the second's answers are
 * still coming, drops them ("got packet from server when not linked") and the second query
 * waits for ever (PgBouncer issue #759). Measured: 300 mixed queries through PgBouncer 1.18
 * hung with the default and finished with max_pipeline 0, which keeps one query per
 * connection in flight (tests/ha/pgbouncer.test.ts).
 */
const POOLED = { prepare: false, max_pipeline: 0 } as const;

export function createDb(url: string, opts: DbOptions = {}): Sql {
  if (!opts.listenUrl || opts.listenUrl === url) return client(url, opts);
  const pool = client(url, opts, POOLED);
  // postgres.js runs every LISTEN of a client on one session of its own, made from the
  // client's URL: the pool's listen is the direct client's, and ending the pool ends both.
  const direct = client(opts.listenUrl, { ...opts, max: 1 });
  const endPool = pool.end.bind(pool);
  return Object.assign(pool, {
    listen: direct.listen,
    end: async (o?: { timeout?: number }) => {
      await Promise.all([endPool(o), direct.end(o)]);
    },
  });
}

function client(url: string, opts: DbOptions, pooled: Partial<typeof POOLED> = {}): Sql {
  return postgres(url, {
    ...pooled,
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

/** Channel of listenWorks's own round trip; nothing else listens on it. */
const SELF_CHANNEL = 'unkey_infra_listen_check';

/**
 * Whether a NOTIFY sent through the pool reaches the client's LISTEN session within `ms`.
 * Through a pooler in transaction mode without a direct listen URL it does not, and every
 * doorbell (feed, engine wake-ups, token revocations) would be silently lost.
 */
export async function listenWorks(sql: Sql, ms: number): Promise<boolean> {
  const token = `${process.pid}-${Date.now()}-${Math.random().toString(36).slice(2)}`;
  let heard!: () => void;
  const got = new Promise<boolean>((resolve) => (heard = () => resolve(true)));
  const l = await sql.listen(SELF_CHANNEL, (payload) => payload === token && heard());
  let timer: NodeJS.Timeout | undefined;
  try {
    await sql.notify(SELF_CHANNEL, token);
    return await Promise.race([got, new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), ms)))]);
  } finally {
    clearTimeout(timer);
    await l.unlisten();
  }
}

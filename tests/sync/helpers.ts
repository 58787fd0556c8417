// Shared fixtures for the change-feed tests: a real ctrl HTTP server with the feed mounted, a
// recording controller, and writers that go through the store's desired-state functions.
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import postgres from 'postgres';
import { AgentAuth, buildCtrlApp } from '../../src/http';
import { clusterFeedRoutes } from '../../src/http/cluster-feed';
import type { Logger } from '../../src/log';
import { createLogger } from '../../src/log';
import { createDb, type Queryable, type Sql } from '../../src/store';
import { insertDeployment } from '../../src/store/deployments';
import { upsertTopology } from '../../src/store/topology';
import { createFeed, type Feed, type FeedOptions } from '../../src/sync/feed';
import type { ResourceController } from '../../src/sync/wire';
import { refKey, type ApplyState, type ResourceRef } from '../../src/sync/wire';
import { newId } from '../../src/ids';

export const silent = createLogger('silent');

export const TOKENS = { 'us-east-1': 'tok-us-east-1-aaaaaaaaaaaa', 'eu-west-1': 'tok-eu-west-1-bbbbbbbbbbbb' };

export interface FeedServer {
  url: string;
  feed: Feed;
  /** The pool the feed uses (its own, so tests can count its queries apart from theirs). */
  sql: Sql;
  /** The HTTP server, for tests that look at its requests. */
  http: Server;
  close(): Promise<void>;
  /** As a crashed replica: every open stream cut at once (no `end` line), then closed. */
  kill(): Promise<void>;
}

export type FeedServerOptions = Partial<Omit<FeedOptions, 'logger'>> & { sql?: Sql; logger?: Logger; agentTokens?: Record<string, string> };

export async function startFeedServer(dbUrl: string, opts: FeedServerOptions = {}): Promise<FeedServer> {
  const sql = opts.sql ?? createDb(dbUrl, { max: 10, applicationName: 'feed-test-ctrl' });
  const logger = opts.logger ?? silent;
  const feed = createFeed({ heartbeatMs: 200, waitLimitMs: 2_000, ...opts, sql, logger });
  const auth = new AgentAuth({ sql, logger, configured: opts.agentTokens ?? TOKENS });
  await auth.start();
  await feed.start();
  const { app } = await buildCtrlApp({ sql, logger, routes: [clusterFeedRoutes({ sql, feed, auth })] });
  await app.listen({ host: '127.0.0.1', port: 0 });
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  const close = async () => {
    await feed.close();
    await app.close();
    await auth.close();
    await sql.end({ timeout: 1 });
  };
  return {
    url,
    feed,
    sql,
    http: app.server,
    close,
    async kill() {
      app.server.closeAllConnections();
      await close();
    },
  };
}

export async function newDeployment(q: Queryable, o: { regions?: string[]; image?: string | null; id?: string } = {}): Promise<string> {
  const id = o.id ?? newId('dep');
  await insertDeployment(q, {
    id,
    workspaceId: 'default',
    projectId: 'default',
    appId: 'default',
    environmentId: 'default',
    image: o.image === undefined ? 'nginx:1' : o.image,
    buildContext: o.image === null ? '/ctx' : null,
    cpuMillicores: 100,
    memoryMib: 128,
    replicas: 1,
    port: 8080,
    command: [],
    env: {},
    regions: o.regions ?? ['us-east-1'],
  });
  return id;
}

/** A deployment with a running topology in `region`; returns its id. */
export async function deployTo(q: Queryable, region: string, replicas = 1): Promise<string> {
  const id = await newDeployment(q, { regions: [region] });
  await upsertTopology(q, { deploymentId: id, region, workspaceId: 'default', replicas });
  return id;
}

export interface Call {
  op: 'apply' | 'delete';
  key: string;
  state?: ApplyState;
  at: number;
}

/** Records every call; `hook` can delay or fail a call to script failures. */
export class RecordingController implements ResourceController {
  calls: Call[] = [];
  gcs: ReadonlySet<string>[] = [];
  /** Latest outcome per resource: the applied state, or 'deleted'. */
  current = new Map<string, ApplyState | 'deleted'>();
  hook: ((op: 'apply' | 'delete', ref: ResourceRef) => Promise<void> | void) | undefined;

  async apply(ref: ResourceRef, state: ApplyState): Promise<void> {
    await this.hook?.('apply', ref);
    this.calls.push({ op: 'apply', key: refKey(ref), state, at: performance.now() });
    this.current.set(refKey(ref), state);
  }
  async delete(ref: ResourceRef): Promise<void> {
    await this.hook?.('delete', ref);
    this.calls.push({ op: 'delete', key: refKey(ref), at: performance.now() });
    this.current.set(refKey(ref), 'deleted');
  }
  async gc(desired: ReadonlySet<string>): Promise<void> {
    this.gcs.push(new Set(desired));
  }
  applied(key: string): ApplyState | undefined {
    const s = this.current.get(key);
    return s === 'deleted' ? undefined : s;
  }
}

/**
 * A pool like createDb's that counts every statement it sends (porsager's debug hook), so a
 * test can measure the feed's database load exactly, apart from its own queries.
 */
export function countingDb(url: string): { sql: Sql; count: () => number } {
  let n = 0;
  const sql = postgres(url, {
    max: 10,
    onnotice: () => {},
    transform: { column: { from: postgres.toCamel } },
    debug: () => {
      n++;
    },
  }) as unknown as Sql;
  return { sql, count: () => n };
}

/** The one poller (tests/helpers/wait.ts), re-exported under the name these tests import;
 *  `sleep` paces load loops (never orders events). */
export { waitFor, pause as sleep } from '../helpers/wait';

/** Reads a whole (short) feed response as parsed lines. */
export async function readFeed(url: string, token: string, query: Record<string, string>): Promise<{ status: number; lines: any[]; body: string }> {
  const u = new URL('/v1/cluster/changes', url);
  for (const [k, v] of Object.entries(query)) u.searchParams.set(k, v);
  const res = await fetch(u, { headers: { authorization: `Bearer ${token}` } });
  const body = await res.text();
  const lines = res.headers.get('content-type')?.includes('ndjson') ? body.split('\n').filter(Boolean).map((l) => JSON.parse(l)) : [];
  return { status: res.status, lines, body };
}

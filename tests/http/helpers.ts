// ctrl alone (no simulator, no krane) on a per-file test database, for tests of the public API
// and its limits. One region has an agent token, so cluster-API calls can be made by hand.
import { after } from 'node:test';
import { randomBytes } from 'node:crypto';
import { connect, type Socket } from 'node:net';
import { pino } from 'pino';
import { loadConfig } from '../../src/config';
import type { Logger } from '../../src/log';
import { startCtrl, type CtrlHandle, type CtrlOverrides } from '../../src/modes/ctrl';
import { testDb, type TestDb } from '../helpers/db';

export const REGION = 'us-east-1';

export interface TestCtrl {
  ctrl: CtrlHandle;
  db: TestDb;
  url: string;
  adminToken: string;
  agentToken: string;
  api(path: string, init?: { method?: string; body?: unknown; token?: string | null }): Promise<{ status: number; body: any; text: string }>;
}

export async function testCtrl(settings: Record<string, unknown> = {}, overrides: CtrlOverrides = {}): Promise<TestCtrl> {
  const db = await testDb();
  const adminToken = randomBytes(24).toString('base64url');
  const agentToken = `uka_${randomBytes(24).toString('base64url')}`;
  const cfg = loadConfig(
    'ctrl',
    { databaseUrl: db.url, adminToken, agentTokens: `${REGION}=${agentToken}`, listen: '127.0.0.1:0', logLevel: 'silent', ...settings },
    {},
  );
  const ctrl = await startCtrl(cfg, { recheckMs: 1000, ...overrides });
  after(() => ctrl.close());
  return {
    ctrl,
    db,
    url: ctrl.url,
    adminToken,
    agentToken,
    async api(path, init = {}) {
      const headers: Record<string, string> = {};
      const token = init.token === undefined ? adminToken : init.token;
      if (token) headers.authorization = `Bearer ${token}`;
      if (init.body !== undefined) headers['content-type'] = 'application/json';
      const r = await fetch(ctrl.url + path, {
        method: init.method ?? (init.body !== undefined ? 'POST' : 'GET'),
        headers,
        ...(init.body !== undefined ? { body: typeof init.body === 'string' ? init.body : JSON.stringify(init.body) } : {}),
      });
      const text = await r.text();
      let body: unknown = null;
      try {
        body = text ? JSON.parse(text) : null;
      } catch {
        body = text;
      }
      return { status: r.status, body, text };
    },
  };
}

/** A raw TCP connection to a URL's host and port, with what the server sent and whether it closed. */
export interface RawConn {
  socket: Socket;
  received(): string;
  closed(): boolean;
}

export async function rawConnect(url: string): Promise<RawConn> {
  const u = new URL(url);
  const socket = connect(Number(u.port), u.hostname);
  let data = '';
  let isClosed = false;
  socket.setEncoding('utf8');
  socket.on('data', (d: string) => (data += d));
  socket.on('error', () => {});
  socket.on('close', () => (isClosed = true));
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', () => resolve());
    socket.once('error', reject);
  });
  after(() => socket.destroy());
  return { socket, received: () => data, closed: () => isClosed };
}

/** A pino logger whose JSON lines are kept in memory, for tests that check what reaches the log. */
export function captureLogger(level: 'info' | 'debug' | 'warn' = 'info'): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const logger = pino({ level }, { write: (s: string) => void lines.push(s) });
  return { logger, lines };
}

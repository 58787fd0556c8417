// Where the API is and how to talk to it. Resolution order, per value: flag, then environment
// (UNKEY_INFRA_API, UNKEY_INFRA_TOKEN, UNKEY_INFRA_DATA_DIR), then <data-dir>/dev.json written by
// `unkey-infra dev`, so the commands work against a local dev stack with no flags at all.
// Requests use node:http rather than fetch: a sentinel deploy waits up to ten minutes for its
// answer, longer than fetch's fixed five-minute header timeout allows.
import http from 'node:http';
import https from 'node:https';
import { readFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import WebSocket from 'ws';
import { envName, schemas } from '../config';
import { DEV_FILE, type DevFile } from './dev-file';
import { ApiError, CliError, EXIT_USAGE, type ApiErrorDetail } from './errors';
import { fillPath, type AnswerOf, type CallArgs, type CallOptions, type Method, type PathsOf } from './api-paths';
import { isTransient, retryDelay, RETRY_BUDGET_MS } from './retry';

/** Same default as `unkey-infra dev --data-dir`, taken from its schema so the two cannot drift. */
export const DEFAULT_DATA_DIR: string = schemas.dev.shape.dataDir.parse(undefined);

/** Ordinary calls answer in milliseconds; this only bounds a hung connection. */
const DEFAULT_REQUEST_TIMEOUT_MS = 30_000;

export interface ClientFlags {
  api?: string | undefined;
  token?: string | undefined;
  dataDir?: string | undefined;
}

export type Env = Record<string, string | undefined>;

export interface ApiTarget {
  url: string;
  token: string;
  /** Where the URL came from, for error messages that say what to fix. */
  source: 'flag' | 'env' | 'dev.json';
  devFilePath: string;
  /** dev.json, when it describes the server at `url` (its regions are the deploy default). */
  devFile?: DevFile;
}

async function readDevFile(path: string): Promise<DevFile | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw new CliError('ERR_CLI_DEV_FILE', `cannot read ${path}: ${(err as Error).message}`, { exitCode: EXIT_USAGE });
  }
  try {
    const f = JSON.parse(text) as DevFile;
    if (typeof f.apiUrl !== 'string' || typeof f.adminToken !== 'string') throw new Error('apiUrl and adminToken must be strings');
    return f;
  } catch (err) {
    throw new CliError('ERR_CLI_DEV_FILE', `${path} is not a valid dev.json: ${(err as Error).message}`, {
      exitCode: EXIT_USAGE,
      hints: ['restart `unkey-infra dev` to rewrite it, or pass --api and --token'],
    });
  }
}

/** Resolves the API URL and admin token; throws a usage error that names every way to give them. */
export async function resolveApiTarget(flags: ClientFlags, env: Env, cwd = process.cwd()): Promise<ApiTarget> {
  const dataDir = flags.dataDir ?? env[envName('dataDir')] ?? DEFAULT_DATA_DIR;
  const devFilePath = resolve(cwd, join(dataDir, DEV_FILE));
  const apiFlag = flags.api ?? undefined;
  const apiEnv = env[envName('api')];
  const devFile = await readDevFile(devFilePath);
  const url = apiFlag ?? apiEnv ?? devFile?.apiUrl;
  const source: ApiTarget['source'] = apiFlag ? 'flag' : apiEnv ? 'env' : 'dev.json';
  if (!url) {
    throw new CliError('ERR_CLI_NO_API', 'no API configured', {
      exitCode: EXIT_USAGE,
      hints: [
        `pass --api URL and --token T, or set ${envName('api')} and ${envName('token')},`,
        `or start \`unkey-infra dev\`, which writes ${devFilePath} (looked there, not found)`,
      ],
    });
  }
  if (!/^https?:\/\/[^/]/.test(url)) {
    throw new CliError('ERR_CLI_BAD_API_URL', `API URL "${url}" (from ${source === 'flag' ? '--api' : source === 'env' ? envName('api') : devFilePath}) is not an http(s) URL`, { exitCode: EXIT_USAGE });
  }
  // dev.json's token goes only to dev.json's own server: an explicit --api pointing elsewhere
  // must not receive the local admin token.
  const devToken = devFile && devFile.apiUrl.replace(/\/+$/, '') === url.replace(/\/+$/, '') ? devFile.adminToken : undefined;
  const token = flags.token ?? env[envName('token')] ?? devToken;
  if (!token) {
    throw new CliError('ERR_CLI_NO_TOKEN', `no admin token for ${url}`, {
      exitCode: EXIT_USAGE,
      hints: [`pass --token T or set ${envName('token')}`],
    });
  }
  // dev.json describes the dev stack only: its regions are no default for another server.
  return { url: url.replace(/\/+$/, ''), token, source, devFilePath, ...(devFile && devToken !== undefined ? { devFile } : {}) };
}

export interface RequestOptions {
  body?: unknown;
  query?: Record<string, string | number | boolean | undefined>;
  /** 0: no limit (the server bounds the wait itself). */
  timeoutMs?: number;
  /**
   * Send the call again while ctrl or its database is away (retry.ts), for up to
   * RETRY_BUDGET_MS. Default: GETs only. Give it to a write that is safe to repeat: a
   * level-triggered one, or one with an `idempotencyKey`.
   */
  retry?: boolean;
  /** Sent as Idempotency-Key: ctrl answers a repeat with what the first call created. */
  idempotencyKey?: string;
}

function unreachable(target: ApiTarget, err: Error & { code?: string }): CliError {
  const hint =
    target.source === 'dev.json'
      ? `the address comes from ${target.devFilePath}; is \`unkey-infra dev\` still running?`
      : 'is ctrl running at that address?';
  return new CliError('ERR_CLI_UNREACHABLE', `cannot reach ctrl at ${target.url}: ${err.code ?? err.message}`, { hints: [hint], cause: err });
}

/** Reads the `{ error: { code, message, details } }` body; anything else still gives a message. */
function apiError(status: number, text: string): ApiError {
  try {
    const e = (JSON.parse(text) as { error?: { code?: string; message?: string; details?: ApiErrorDetail[] } }).error;
    if (e && typeof e.message === 'string') return new ApiError(status, e.code ?? 'ERR_UNKNOWN', e.message, Array.isArray(e.details) ? e.details : []);
  } catch {
    // not JSON: fall through to the raw text, e.g. a proxy's HTML error page
  }
  return new ApiError(status, 'ERR_UNKNOWN', text.trim().slice(0, 200) || http.STATUS_CODES[status] || 'error', []);
}

export class ApiClient {
  readonly target: ApiTarget;
  readonly #agent: http.Agent;

  constructor(target: ApiTarget) {
    this.target = target;
    // Keep-alive: `--wait` polls the same server every few seconds.
    this.#agent = target.url.startsWith('https:') ? new https.Agent({ keepAlive: true }) : new http.Agent({ keepAlive: true });
  }

  async request<T>(method: string, path: string, opts: RequestOptions = {}): Promise<T> {
    if (!(opts.retry ?? method === 'GET')) return this.#once<T>(method, path, opts);
    const giveUpAt = Date.now() + RETRY_BUDGET_MS;
    for (let attempt = 1; ; attempt++) {
      try {
        return await this.#once<T>(method, path, opts);
      } catch (err) {
        const wait = retryDelay(attempt);
        if (!isTransient(err) || Date.now() + wait > giveUpAt) throw err;
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }

  #once<T>(method: string, path: string, opts: RequestOptions): Promise<T> {
    const url = new URL(this.target.url + path);
    for (const [k, v] of Object.entries(opts.query ?? {})) if (v !== undefined && v !== '') url.searchParams.set(k, String(v));
    const payload = opts.body === undefined ? undefined : JSON.stringify(opts.body);
    const headers: Record<string, string> = { authorization: `Bearer ${this.target.token}`, accept: 'application/json' };
    if (opts.idempotencyKey) headers['idempotency-key'] = opts.idempotencyKey;
    if (payload !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(payload));
    }
    const timeoutMs = opts.timeoutMs ?? DEFAULT_REQUEST_TIMEOUT_MS;
    const mod = url.protocol === 'https:' ? https : http;
    return new Promise<T>((resolvePromise, reject) => {
      const req = mod.request(url, { method, headers, agent: this.#agent }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', (err) => reject(unreachable(this.target, err)));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          const status = res.statusCode ?? 0;
          if (status < 200 || status >= 300) return reject(apiError(status, text));
          try {
            resolvePromise((text ? JSON.parse(text) : null) as T);
          } catch {
            reject(new CliError('ERR_CLI_BAD_RESPONSE', `ctrl at ${this.target.url} answered ${method} ${path} with non-JSON: ${text.slice(0, 200)}`));
          }
        });
      });
      if (timeoutMs > 0) {
        req.setTimeout(timeoutMs, () => req.destroy(Object.assign(new Error(`no answer within ${timeoutMs} ms`), { code: 'ETIMEDOUT' })));
      }
      req.on('error', (err) => reject(unreachable(this.target, err)));
      req.end(payload);
    });
  }

  /** GET a documented route; its answer is typed from the OpenAPI document (api.gen.ts). */
  get<P extends PathsOf<'get'>>(template: P, ...[opts]: CallArgs<P, 'get'>): Promise<AnswerOf<P, 'get'>> {
    return this.#call('GET', template, opts);
  }

  /** POST a documented route; an absent body is sent as `{}`. */
  post<P extends PathsOf<'post'>>(template: P, ...[opts]: CallArgs<P, 'post'>): Promise<AnswerOf<P, 'post'>> {
    return this.#call('POST', template, opts);
  }

  put<P extends PathsOf<'put'>>(template: P, ...[opts]: CallArgs<P, 'put'>): Promise<AnswerOf<P, 'put'>> {
    return this.#call('PUT', template, opts);
  }

  delete<P extends PathsOf<'delete'>>(template: P, ...[opts]: CallArgs<P, 'delete'>): Promise<AnswerOf<P, 'delete'>> {
    return this.#call('DELETE', template, opts);
  }

  #call<T>(method: Uppercase<Method>, template: string, opts: CallOptions<never, never> | object | undefined): Promise<T> {
    const o = (opts ?? {}) as { path?: Record<string, string>; query?: RequestOptions['query']; body?: unknown } & Pick<RequestOptions, 'timeoutMs' | 'retry' | 'idempotencyKey'>;
    const body = o.body ?? (method === 'POST' || method === 'PUT' ? {} : undefined);
    return this.request<T>(method, fillPath(template, o.path), {
      ...(o.query ? { query: o.query } : {}),
      ...(body !== undefined ? { body } : {}),
      ...(o.timeoutMs !== undefined ? { timeoutMs: o.timeoutMs } : {}),
      ...(o.retry !== undefined ? { retry: o.retry } : {}),
      ...(o.idempotencyKey !== undefined ? { idempotencyKey: o.idempotencyKey } : {}),
    });
  }

  /** The live event WebSocket (GET /v1/events), filtered by the given query. */
  events(query: Record<string, string>): WebSocket {
    const url = new URL(`${this.target.url.replace(/^http/, 'ws')}/v1/events`);
    for (const [k, v] of Object.entries(query)) url.searchParams.set(k, v);
    return new WebSocket(url, { headers: { authorization: `Bearer ${this.target.token}` } });
  }

  /** Drops kept-alive sockets so the process can exit as soon as the command is done. */
  close(): void {
    this.#agent.destroy();
  }
}

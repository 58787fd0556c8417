// Follows one deployment until it settles: live events over the WebSocket drive the view, and
// a periodic GET is the backstop (events are not replayed, a socket can drop, and the final
// snapshot carries the error and domains). The socket is opened before the first GET, so
// nothing that happens between them is missed. When the socket is lost (refused, dropped, or
// silent past its greeting) the watch carries on by polling and says so once (onFallback).
import type { ApiClient } from './client';
import { openLive, type LiveSocket } from './live';
import { ApiError, CliError } from './errors';
import type { DeploymentDetail } from './api.gen';
import type { LiveEvent } from '../live-events';
import { applyEvent, mergeSnapshot, TERMINAL_STATUSES, type ProgressState } from './progress';

export interface WatchOptions {
  /** Give up after this long; the deploy workflow's own deadline is 5 minutes by default. */
  timeoutMs: number;
  /** Backstop poll interval. */
  pollMs: number;
  /** Declare ctrl gone after failing to reach it for this long (a restart takes seconds). */
  unreachableMs: number;
  /** Use the live event socket (off: polling only). */
  live: boolean;
  /** A socket that has not sent its greeting after this long counts as lost. */
  helloTimeoutMs: number;
}

// Six minutes outlasts the server's default five-minute deploy deadline, so a deploy that
// times out server-side is reported as failed, with its reason, rather than as a client timeout.
// The greeting is the server's first frame, sent as the socket opens: 5 s is far beyond any
// healthy ctrl, and short next to a deploy.
export const DEFAULT_WATCH: WatchOptions = { timeoutMs: 6 * 60_000, pollMs: 2000, unreachableMs: 15_000, live: true, helloTimeoutMs: 5000 };

export type WatchOutcome = 'ready' | 'failed' | 'stopped' | 'timeout' | 'unreachable' | 'error';

export interface WatchResult {
  outcome: WatchOutcome;
  /** The last snapshot read (absent if none could be read). */
  deployment?: DeploymentDetail;
  state?: ProgressState;
  /** Why the watch ended early (unreachable, error). */
  error?: unknown;
}

function outcomeOf(status: string): WatchOutcome {
  // A rolled-back canary or blue-green failed its gate: a failure with a reason, like `failed`.
  return status === 'ready' ? 'ready' : status === 'failed' || status === 'rolled_back' ? 'failed' : 'stopped';
}

/** A transient failure: keep polling until `unreachableMs` has passed without an answer. */
function transient(err: unknown): boolean {
  return (err instanceof CliError && err.code === 'ERR_CLI_UNREACHABLE') || (err instanceof ApiError && err.status >= 500);
}

export function watchDeployment(
  client: ApiClient,
  id: string,
  options: Partial<WatchOptions>,
  onChange: (s: ProgressState) => void,
  /** Called once, the first time the live socket is lost, with why. */
  onFallback: (reason: string) => void = () => {},
): Promise<WatchResult> {
  return new Promise<WatchResult>((resolve) => new DeploymentWatch(client, id, { ...DEFAULT_WATCH, ...options }, onChange, onFallback, resolve).start());
}

/** One watch: the socket, the backstop poll and the deadline, ended once by `finish`. */
class DeploymentWatch {
  #state: ProgressState | undefined;
  #deployment: DeploymentDetail | undefined;
  #socket: LiveSocket | undefined;
  #fellBack = false;
  #finished = false;
  #polling = false;
  #pollAgain = false;
  #lastContact = Date.now();
  #lastOpen = 0;
  /** Events that arrive before the first snapshot: applied on top of it, not dropped. */
  readonly #early: LiveEvent[] = [];
  #timer: NodeJS.Timeout | undefined;
  #deadline: NodeJS.Timeout | undefined;

  constructor(
    private readonly client: ApiClient,
    private readonly id: string,
    private readonly o: WatchOptions,
    private readonly onChange: (s: ProgressState) => void,
    private readonly onFallback: (reason: string) => void,
    private readonly resolve: (r: WatchResult) => void,
  ) {}

  start(): void {
    this.#timer = setInterval(() => void this.#poll(), this.o.pollMs);
    this.#deadline = setTimeout(() => this.#finish('timeout'), this.o.timeoutMs);
    this.#openSocket();
    void this.#poll();
  }

  #finish(outcome: WatchOutcome, error?: unknown): void {
    if (this.#finished) return;
    this.#finished = true;
    clearInterval(this.#timer);
    clearTimeout(this.#deadline);
    this.#socket?.close();
    const d = this.#deployment;
    const s = this.#state;
    this.resolve({ outcome, ...(d ? { deployment: d } : {}), ...(s ? { state: s } : {}), ...(error !== undefined ? { error } : {}) });
  }

  #openSocket(): void {
    // At most one attempt per poll interval: a proxy that refuses WebSockets must not turn
    // reconnecting into a busy loop.
    if (!this.o.live || this.#finished || Date.now() - this.#lastOpen < this.o.pollMs) return;
    this.#lastOpen = Date.now();
    const live: LiveSocket = openLive(this.client, { deploymentId: this.id, type: 'deployment' }, this.o.helloTimeoutMs, {
      onEvent: (e) => this.#onEvent(e),
      // A lost socket is not fatal: polling carries on and reopens it after the next answer.
      onLost: (reason) => {
        if (this.#socket === live) this.#socket = undefined;
        if (this.#finished) return;
        if (!this.#fellBack) {
          this.#fellBack = true;
          this.onFallback(reason);
        }
        // An open socket that closes may mean ctrl went away or finished: look now.
        if (live.opened) void this.#poll();
      },
    });
    this.#socket = live;
  }

  #onEvent(e: LiveEvent): void {
    if (this.#finished) return;
    if (!this.#state) {
      this.#early.push(e);
      return;
    }
    this.#state = applyEvent(this.#state, e);
    this.onChange(this.#state);
    // The snapshot, not the event, ends the watch: it carries the error and domains.
    if (e.type === 'deployment.status' && TERMINAL_STATUSES.has(e.status)) void this.#poll();
  }

  async #poll(): Promise<void> {
    if (this.#finished) return;
    if (this.#polling) {
      this.#pollAgain = true;
      return;
    }
    this.#polling = true;
    try {
      const d = await this.client.get('/v1/deployments/{id}', { path: { id: this.id } });
      if (this.#finished) return;
      this.#lastContact = Date.now();
      this.#deployment = d;
      let state = mergeSnapshot(this.#state, d);
      for (const e of this.#early.splice(0)) state = applyEvent(state, e);
      this.#state = state;
      this.onChange(state);
      if (TERMINAL_STATUSES.has(d.status)) return this.#finish(outcomeOf(d.status));
      if (!this.#socket) this.#openSocket();
    } catch (err) {
      if (this.#finished) return;
      if (!transient(err)) return this.#finish('error', err);
      if (Date.now() - this.#lastContact >= this.o.unreachableMs) return this.#finish('unreachable', err);
    } finally {
      this.#polling = false;
      if (this.#pollAgain && !this.#finished) {
        this.#pollAgain = false;
        void this.#poll();
      }
    }
  }
}

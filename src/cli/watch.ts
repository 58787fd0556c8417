// Follows one deployment until it settles: live events over the WebSocket drive the view, and
// a periodic GET is the backstop (events are not replayed, a socket can drop, and the final
// snapshot carries the error and domains). The socket is opened before the first GET, so
// nothing that happens between them is missed. When the socket is lost (refused, dropped, or
// silent past its greeting) the watch carries on by polling and says so once (onFallback).
import type { ApiClient } from './client';
import { openLive, type LiveSocket } from './live';
import { ApiError, CliError } from './errors';
import type { DeploymentDetail, LiveEvent } from './api-types';
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
  const o = { ...DEFAULT_WATCH, ...options };
  return new Promise<WatchResult>((resolve) => {
    let state: ProgressState | undefined;
    let deployment: DeploymentDetail | undefined;
    let socket: LiveSocket | undefined;
    let fellBack = false;
    let finished = false;
    let polling = false;
    let pollAgain = false;
    let lastContact = Date.now();
    let lastOpen = 0;
    // Events that arrive before the first snapshot: applied on top of it, not dropped.
    const early: LiveEvent[] = [];

    const finish = (outcome: WatchOutcome, error?: unknown) => {
      if (finished) return;
      finished = true;
      clearInterval(timer);
      clearTimeout(deadline);
      socket?.close();
      resolve({ outcome, ...(deployment ? { deployment } : {}), ...(state ? { state } : {}), ...(error !== undefined ? { error } : {}) });
    };

    const openSocket = () => {
      // At most one attempt per poll interval: a proxy that refuses WebSockets must not turn
      // reconnecting into a busy loop.
      if (!o.live || finished || Date.now() - lastOpen < o.pollMs) return;
      lastOpen = Date.now();
      const live: LiveSocket = openLive(client, { deploymentId: id, type: 'deployment' }, o.helloTimeoutMs, {
        onEvent(e) {
          if (finished) return;
          if (!state) {
            early.push(e);
            return;
          }
          state = applyEvent(state, e);
          onChange(state);
          // The snapshot, not the event, ends the watch: it carries the error and domains.
          if (e.type === 'deployment.status' && TERMINAL_STATUSES.has(e.status)) void poll();
        },
        // A lost socket is not fatal: polling carries on and reopens it after the next answer.
        onLost(reason) {
          if (socket === live) socket = undefined;
          if (finished) return;
          if (!fellBack) {
            fellBack = true;
            onFallback(reason);
          }
          // An open socket that closes may mean ctrl went away or finished: look now.
          if (live.opened) void poll();
        },
      });
      socket = live;
    };

    const poll = async (): Promise<void> => {
      if (finished) return;
      if (polling) {
        pollAgain = true;
        return;
      }
      polling = true;
      try {
        const d = await client.get<DeploymentDetail>(`/v1/deployments/${encodeURIComponent(id)}`);
        if (finished) return;
        lastContact = Date.now();
        deployment = d;
        state = mergeSnapshot(state, d);
        for (const e of early.splice(0)) state = applyEvent(state, e);
        onChange(state);
        if (TERMINAL_STATUSES.has(d.status)) return finish(outcomeOf(d.status));
        if (!socket) openSocket();
      } catch (err) {
        if (finished) return;
        if (!transient(err)) return finish('error', err);
        if (Date.now() - lastContact >= o.unreachableMs) return finish('unreachable', err);
      } finally {
        polling = false;
        if (pollAgain && !finished) {
          pollAgain = false;
          void poll();
        }
      }
    };

    const timer = setInterval(() => void poll(), o.pollMs);
    const deadline = setTimeout(() => finish('timeout'), o.timeoutMs);
    openSocket();
    void poll();
  });
}

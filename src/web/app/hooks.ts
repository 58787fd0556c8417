// The hooks every view uses: the API and the live event stream from context, data loading
// with the newest answer winning, a debounced refetch for bursts of events, a ticking clock.
import { createContext } from 'preact';
import { useCallback, useContext, useEffect, useRef, useState } from 'preact/hooks';
import { ApiError, type Api } from './api';

export type LiveEventAny = { type: string } & Record<string, unknown>;

export interface Session {
  api: Api;
  subscribe(fn: (e: LiveEventAny) => void): () => void;
  /** Bumped on every (re)connection of the event socket: views refetch what they show. */
  generation: number;
  /** Whether the signed-in credential holds a permission (GET /v1/keys/self); views hide the
   *  actions it may not take. False until the answer is in. */
  can(permission: string): boolean;
  /** True for the admin token: fleet-wide views (sentinel rollouts) are its alone. */
  unscoped: boolean;
}

export const SessionContext = createContext<Session | null>(null);

export function useSession(): Session {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside SessionContext');
  return s;
}

/** Calls `fn` for every live event while the component is mounted (always the latest `fn`). */
export function useEvents(fn: (e: LiveEventAny) => void): void {
  const { subscribe } = useSession();
  const ref = useRef(fn);
  ref.current = fn;
  useEffect(() => subscribe((e) => ref.current(e)), [subscribe]);
}

export interface Resource<T> {
  data: T | undefined;
  error: ApiError | undefined;
  loading: boolean;
  reload(): void;
  /** Patches the loaded data in place (from an event) without a request. */
  update(fn: (d: T) => T): void;
}

function asApiError(err: unknown): ApiError {
  return err instanceof ApiError ? err : new ApiError(0, 'ERR_UNKNOWN', err instanceof Error ? err.message : String(err));
}

/** Loads on mount, when `deps` change, on reload() and on every reconnect; the newest load wins
 *  and the previous data stays on screen while it runs. */
export function useResource<T>(load: (api: Api) => Promise<T>, deps: unknown[]): Resource<T> {
  const { api, generation } = useSession();
  const [state, setState] = useState<{ data?: T; error?: ApiError; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  const seq = useRef(0);
  useEffect(() => {
    const mine = ++seq.current;
    setState((s) => ({ ...s, loading: true }));
    load(api).then(
      (data) => mine === seq.current && setState({ data, loading: false }),
      (err) => mine === seq.current && setState((s) => ({ ...s, error: asApiError(err), loading: false })),
    );
    // `load` is recreated every render; `deps` name what it depends on.
  }, [api, generation, tick, ...deps]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  const update = useCallback((fn: (d: T) => T) => setState((s) => (s.data === undefined ? s : { ...s, data: fn(s.data) })), []);
  return { data: state.data, error: state.error, loading: state.loading, reload, update };
}

/** Returns a trigger that runs `fn` once, `ms` after the first call of a burst. */
export function useDebounced(fn: () => void, ms: number): () => void {
  const ref = useRef(fn);
  ref.current = fn;
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);
  return useCallback(() => {
    if (timer.current !== undefined) return;
    timer.current = setTimeout(() => {
      timer.current = undefined;
      ref.current();
    }, ms);
  }, [ms]);
}

/** The current time, re-read every `ms`: ages on the page move without data changing. */
export function useNow(ms = 5000): number {
  const [now, setNow] = useState(() => Date.now());
  useEffect(() => {
    const t = setInterval(() => setNow(Date.now()), ms);
    return () => clearInterval(t);
  }, [ms]);
  return now;
}

/** Runs `fn` every `ms` while mounted: a backstop for data that changes without events. */
export function useInterval(fn: () => void, ms: number): void {
  const ref = useRef(fn);
  ref.current = fn;
  useEffect(() => {
    const t = setInterval(() => ref.current(), ms);
    return () => clearInterval(t);
  }, [ms]);
}

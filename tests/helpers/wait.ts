// The one way tests wait: `until` polls a condition, `within` bounds a promise. Both fail with
// what they last saw, so a wait that runs out in CI explains itself, and both give up only at
// the safety net below: a deadline is there so a broken test ends, never the thing tested.
// Every folder's older name for the poller (stack.ts `until`, kube/helpers `until`,
// kube-sim/helpers and sync/helpers and workflow/engine/helpers `waitFor`) re-exports these.
import { inspect } from 'node:util';

/**
 * How long any wait may take before it fails: generous, because a condition that holds at all
 * holds long before this even on a loaded 2-core machine (the slowest the suite meets is a
 * whole-system deploy under CI's CPU burners, seconds). A wait never ends sooner: a shorter
 * `ms` given by a caller is raised to this. UNKEY_INFRA_TEST_SAFETY_NET_MS changes it for a
 * machine that needs more.
 */
export const SAFETY_NET_MS = Number(process.env.UNKEY_INFRA_TEST_SAFETY_NET_MS ?? 60_000);
/** Between two polls: short, since the checks are cheap reads. */
const STEP_MS = 20;
/** How much of the last value a message shows. */
const SHOWN_CHARS = 600;

type NotYet = undefined | null | false | 0 | '';
/** A condition: a truthy value means it holds (and is returned); a falsy one means not yet. */
export type Probe<T> = () => T | NotYet | Promise<T | NotYet>;

export interface UntilOptions {
  /** What is awaited, for the message. */
  what?: string;
  /** Raises the safety net for this wait (never lowers it). */
  ms?: number;
  stepMs?: number;
  /** Called when the wait runs out: the state worth showing besides the probe's last value. */
  show?: () => unknown;
}

/** A value as a short line for a failure message. */
export function shown(v: unknown): string {
  const s = typeof v === 'string' ? v : inspect(v, { depth: 4, breakLength: Infinity, maxArrayLength: 20, maxStringLength: 200 });
  return s.length > SHOWN_CHARS ? `${s.slice(0, SHOWN_CHARS)}…` : s;
}

async function poll<T>(fn: Probe<T>, o: UntilOptions): Promise<T> {
  const ms = Math.max(o.ms ?? 0, SAFETY_NET_MS);
  const end = Date.now() + ms;
  let last: unknown;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v as T;
      last = v;
      lastErr = undefined;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() > end) {
      const parts = [`${o.what ?? 'condition'} not met within ${ms} ms`, lastErr ? `last error: ${shown(lastErr instanceof Error ? lastErr.message : lastErr)}` : `last value: ${shown(last)}`];
      if (o.show) parts.push(`seen: ${shown(await Promise.resolve().then(o.show).catch((e: unknown) => `(show failed: ${String(e)})`))}`);
      throw new Error(parts.join('; '));
    }
    await new Promise((r) => setTimeout(r, o.stepMs ?? STEP_MS));
  }
}

/**
 * Calls `fn` until it returns a truthy value, and returns that; errors count as "not yet".
 * Past the safety net it throws, naming what was awaited, the last
 * value or error, and `show()`'s state. Call shapes (one implementation; the positional ones
 * are the folders' older helpers, kept so their callers need no change):
 *   until(fn, { what, show, ms, stepMs })
 *   until(fn, ms?, what?, stepMs?)        (a number as the third argument is the step)
 *   until(what, fn, ms?, stepMs?)         (waitFor's order)
 */
export function until<T>(fn: Probe<T>, opts?: UntilOptions): Promise<T>;
export function until<T>(fn: Probe<T>, ms?: number, what?: string | number, stepMs?: number): Promise<T>;
export function until<T>(what: string, fn: Probe<T>, ms?: number, stepMs?: number): Promise<T>;
export function until<T>(a: Probe<T> | string, b?: Probe<T> | UntilOptions | number, c?: string | number, d?: number): Promise<T> {
  if (typeof a === 'string') return poll(b as Probe<T>, { what: a, ms: c as number | undefined, stepMs: d });
  if (typeof b === 'object') return poll(a, b);
  if (typeof c === 'number') return poll(a, { ms: b as number | undefined, stepMs: c });
  return poll(a, { ms: b as number | undefined, what: c, stepMs: d });
}

/** The same function under the name several folders use. */
export const waitFor = until;

/**
 * `p`, or a rejection naming `what` (and `show()`'s state) when it has not settled by the
 * safety net: a hang fails the test with what it saw instead of holding the file until the
 * runner's timeout. `ms` raises the net, never lowers it.
 */
export function within<T>(p: Promise<T>, what: string, o: number | { ms?: number; show?: () => unknown } = {}): Promise<T> {
  const opts = typeof o === 'number' ? { ms: o } : o;
  const ms = Math.max(opts.ms ?? 0, SAFETY_NET_MS);
  let timer!: NodeJS.Timeout;
  const t = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      let seen = '';
      try {
        seen = opts.show ? `; seen: ${shown(opts.show())}` : '';
      } catch (err) {
        seen = `; (show failed: ${String(err)})`;
      }
      reject(new Error(`${what} did not settle within ${ms} ms${seen}`));
    }, ms);
  });
  return Promise.race([p, t]).finally(() => clearTimeout(timer));
}

/** Settles after `ms`. For pacing a load or letting a clock move, never for ordering: a test
 *  that sleeps so that something "has happened" waits on that something instead. */
export const pause = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

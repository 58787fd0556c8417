// Polling until something holds, for tests that wait on other processes, sockets and the
// database. One implementation; the folders' helpers wrap it in the call shapes they use.

/**
 * Calls `fn` every `stepMs` until it returns a truthy value (returned) or `ms` pass (throws,
 * naming `what` and the last error `fn` threw, if any). Errors count as "not yet".
 */
export async function until<T>(fn: () => T | undefined | null | false | Promise<T | undefined | null | false>, ms = 10_000, what = 'condition', stepMs = 20): Promise<T> {
  const end = Date.now() + ms;
  let last: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > end) throw new Error(`${what} not met within ${ms} ms${last ? `: ${String(last)}` : ''}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

// Waiting for the outside world (krane's reports) inside a workflow: an awakeable that the
// status-report path resolves, backed by a periodic re-check of the database and bounded by a
// deadline. The awakeable alone is not enough: a report stored just before a ctrl crash (or
// during a restart) may never send its wake-up, and then only the re-check notices.
import { z } from 'zod';
import type { Context } from '../engine';
import { handler, TimeoutError } from '../engine';

export interface Waiter {
  /** Polls `probe` (journaled) until it reports done, waking early when notified. */
  until<I>(o: {
    timeoutMs: number;
    recheckMs: number;
    probe: () => Promise<{ done: boolean; info: I }>;
    onTimeout: (last: I) => Error;
    /** Why to stop waiting early because a region the wait depends on stays offline (null:
     *  keep waiting); given when the wait began. See src/workflow/regions.ts#offlineCheck. */
    offline?: (startedAt: number) => Promise<string | null>;
    onOffline?: (reason: string) => Error;
  }): Promise<I>;
}

/**
 * The shared handler that wakes a waiter of the same object: resolves the awakeable stored
 * under `stateKey`, if one is stored. Shared, so it runs while the exclusive waiter holds the key.
 */
export function notifyHandler(stateKey: string) {
  return handler({ input: z.object({}).default({}), output: z.object({ notified: z.boolean() }) }, async (ctx) => {
    const awakeableId = await ctx.get<string>(stateKey);
    if (!awakeableId) return { notified: false };
    return { notified: await ctx.resolveAwakeable(awakeableId) };
  });
}

/**
 * Creates the awakeable and stores its id under `stateKey` right away, so a caller can open
 * the waiter before the write that triggers the change and no notification is missed.
 */
export async function openWaiter(ctx: Context, stateKey: string): Promise<Waiter> {
  let awk = ctx.awakeable<void>();
  await ctx.set(stateKey, awk.id);
  return {
    async until(o) {
      const deadline = await ctx.run('deadline', () => Date.now() + o.timeoutMs);
      try {
        for (;;) {
          const r = await ctx.run('check', async () => {
            const probed = await o.probe();
            const offline = !probed.done && o.offline ? await o.offline(deadline - o.timeoutMs) : null;
            return { ...probed, now: Date.now(), offline };
          });
          if (r.done) return r.info;
          if (r.offline && o.onOffline) throw o.onOffline(r.offline);
          const left = deadline - r.now;
          if (left <= 0) throw o.onTimeout(r.info);
          try {
            await awk.promise.orTimeout(Math.min(left, o.recheckMs));
          } catch (err) {
            if (err instanceof TimeoutError) continue;
            throw err;
          }
          // Woken: a resolved awakeable would not block again, so wait on a fresh one.
          awk = ctx.awakeable<void>();
          await ctx.set(stateKey, awk.id);
        }
      } finally {
        await ctx.clear(stateKey);
      }
    },
  };
}

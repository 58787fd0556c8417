// How a deployment takes traffic (issue 13), as the zod schema the public API validates and the
// pure helpers the workflows use. Durations are strings (`30s`, `1m30s`, `500ms`) so bodies and
// the CLI read like the documentation; src/duration.ts (the parser flags use too) turns them
// into milliseconds.
import { z } from 'zod';
import { durationProblem, parseDuration } from '../duration';

export { parseDuration };

/** A duration within [minMs, maxMs], validated where it is parsed so the 400 names the field. */
const duration = (minMs: number, maxMs: number) =>
  z.string().max(32).superRefine((s, ctx) => {
    const ms = parseDuration(s);
    if (ms === undefined) ctx.addIssue({ code: 'custom', message: durationProblem(s) });
    else if (ms < minMs || ms > maxMs) ctx.addIssue({ code: 'custom', message: `${s} is outside ${minMs}ms-${maxMs / 3_600_000}h` });
  });

// Checks more often than every 100 ms would make the analysis itself the load; a step or
// analysis longer than a day is a forgotten deployment, not a strategy.
const DAY_MS = 86_400_000;

export const Analysis = z
  .strictObject({
    interval: duration(100, DAY_MS).default('10s'),
    /** Failed checks (a bound left, or a query error) that fail the gate; 1 = the first one. */
    failureLimit: z.number().int().min(1).max(100).default(1),
    prometheus: z
      .strictObject({
        url: z.url({ protocol: /^https?$/ }).max(2048),
        query: z.string().min(1).max(4096),
        min: z.number().optional(),
        max: z.number().optional(),
      })
      .superRefine((p, ctx) => {
        if (p.min === undefined && p.max === undefined) ctx.addIssue({ code: 'custom', path: ['min'], message: 'give min, max or both: a query without bounds cannot fail' });
        if (p.min !== undefined && p.max !== undefined && p.min > p.max) ctx.addIssue({ code: 'custom', path: ['max'], message: `max ${p.max} is below min ${p.min}` });
      }),
  });
export type Analysis = z.output<typeof Analysis>;

const Step = z.strictObject({
  // multipleOf, not int(): int() aborts the step, which would hide an order problem from the 400.
  weight: z.number().multipleOf(1, 'must be a whole percent').min(1, 'must be 1-99').max(99, 'must be 1-99 (100 is the end of every canary)'),
  pause: duration(0, DAY_MS),
});

/**
 * Checks one step may journal: every check is a journal entry of the deploy invocation, which a
 * resume replays in full, so a day-long pause checked every 100 ms would make a resume slow.
 */
export const MAX_CHECKS_PER_STEP = 10_000;

export const Strategy = z.discriminatedUnion('type', [
  z.strictObject({ type: z.literal('rolling') }),
  z.strictObject({
    type: z.literal('canary'),
    steps: z
      .array(Step)
      .min(1, 'a canary needs at least one step')
      .max(20)
      // `when`: the order is checked even when some step is bad otherwise (a bad pause), so
      // one 400 names every problem; the values are unvalidated then, hence the number guard.
      .superRefine(
        (steps, ctx) => {
          if (!Array.isArray(steps)) return;
          steps.forEach((s, i) => {
            const prev = steps[i - 1]?.weight;
            if (typeof s?.weight === 'number' && typeof prev === 'number' && !(s.weight > prev)) {
              ctx.addIssue({ code: 'custom', path: [i, 'weight'], message: `${s.weight} must be greater than the previous step's ${prev}` });
            }
          });
        },
        { when: () => true } as never,
      ),
    analysis: Analysis.optional(),
  }).superRefine((c, ctx) => {
    const every = c.analysis ? parseDuration(c.analysis.interval) : undefined;
    if (!every) return;
    c.steps.forEach((s, i) => {
      const checks = (parseDuration(s.pause) ?? 0) / every;
      if (checks > MAX_CHECKS_PER_STEP) ctx.addIssue({ code: 'custom', path: ['steps', i, 'pause'], message: `${s.pause} at ${c.analysis!.interval} is ${Math.ceil(checks)} checks; at most ${MAX_CHECKS_PER_STEP} per step (lengthen the interval)` });
    });
  }),
  z.strictObject({ type: z.literal('blue-green'), analysis: Analysis.optional(), scaleDownDelay: duration(0, DAY_MS).default('5m') }),
]);
export type Strategy = z.output<typeof Strategy>;
export type CanaryStrategy = Extract<Strategy, { type: 'canary' }>;

export const ROLLING: Strategy = { type: 'rolling' };

/** A stored strategy (jsonb, null on rows from before strategies) read back; unreadable → rolling. */
export function strategyOf(stored: unknown): Strategy {
  const r = Strategy.safeParse(stored ?? ROLLING);
  return r.success ? r.data : ROLLING;
}

/** Milliseconds of a duration the schema already accepted. */
export const ms = (s: string): number => parseDuration(s) ?? 0;

// How a deployment takes traffic (issue 13), as the zod schema the public API validates and the
// pure helpers the workflows use. Durations are strings (`30s`, `1m30s`, `500ms`) so bodies and
// the CLI read like the documentation; src/duration.ts (the parser flags use too) turns them
// into milliseconds.
import { z } from 'zod';
import { durationProblem, parseDuration } from '../../duration';

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
    /**
     * `threshold`: one instant query against min/max. `compare` (issue 27): the canary's series
     * against its stable's over the same window, per region (src/workflow/progressive/judge/).
     */
    judge: z.enum(['threshold', 'compare']).default('threshold'),
    prometheus: z.strictObject({
      url: z.url({ protocol: /^https?$/ }).max(2048),
      /** compare: `$deployment`, `$region` and `$step` are replaced in each query. */
      query: z.string().min(1).max(4096),
      /** compare only: request counts beside `query`'s error counts, for the count rule. */
      totalQuery: z.string().min(1).max(4096).optional(),
      min: z.number().optional(),
      max: z.number().optional(),
    }),
    // compare only; their defaults are filled in by the judge, so a threshold gate reads back as written.
    direction: z.enum(['lower-is-better', 'higher-is-better']).optional(),
    /** Relative to the stable's median: 0.1 lets the canary be up to 10% worse. */
    tolerance: z.number().min(0).max(10).optional(),
    /** 1 − confidence is the level of the sequential test: the most a healthy canary may fail. */
    confidence: z.number().min(0.5).max(0.9999).optional(),
    /** Samples each side needs before a verdict (fewer: inconclusive). */
    minSamples: z.number().int().min(3).max(100_000).optional(),
    /** A canary shown within tolerance ends its step early instead of waiting out the pause. */
    promoteEarly: z.boolean().optional(),
  })
  .superRefine((a, ctx) => {
    const p = a.prometheus;
    if (a.judge === 'threshold') {
      if (p.min === undefined && p.max === undefined) ctx.addIssue({ code: 'custom', path: ['prometheus', 'min'], message: 'give min, max or both: a query without bounds cannot fail' });
      if (p.min !== undefined && p.max !== undefined && p.min > p.max) ctx.addIssue({ code: 'custom', path: ['prometheus', 'max'], message: `max ${p.max} is below min ${p.min}` });
      for (const f of COMPARE_ONLY) if (a[f] !== undefined) ctx.addIssue({ code: 'custom', path: [f], message: `${f} is for "judge": "compare"` });
      if (p.totalQuery !== undefined) ctx.addIssue({ code: 'custom', path: ['prometheus', 'totalQuery'], message: 'totalQuery is for "judge": "compare"' });
    } else {
      for (const f of ['min', 'max'] as const) if (p[f] !== undefined) ctx.addIssue({ code: 'custom', path: ['prometheus', f], message: `${f} is for "judge": "threshold"; compare judges against the stable (use tolerance)` });
      if (!p.query.includes('$deployment')) ctx.addIssue({ code: 'custom', path: ['prometheus', 'query'], message: 'a compare query must select by $deployment, or stable and canary read the same series' });
    }
  });
const COMPARE_ONLY = ['direction', 'tolerance', 'confidence', 'minSamples', 'promoteEarly'] as const;
export type Analysis = z.output<typeof Analysis>;

/** The compare judge's settings with their defaults (issue 27: 10% tolerance, 95%, 20 samples). */
export function compareSettings(a: Analysis) {
  return {
    direction: a.direction ?? 'lower-is-better',
    tolerance: a.tolerance ?? 0.1,
    confidence: a.confidence ?? 0.95,
    minSamples: a.minSamples ?? 20,
    promoteEarly: a.promoteEarly ?? false,
  } as const;
}

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

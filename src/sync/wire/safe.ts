// What every request body must be before a schema looks at its meaning: values PostgreSQL can
// store and a log can print. One set, used by the public and the cluster API alike (and by
// krane's reports, which these schemas describe), so no field has a check of its own to forget:
//
// - strings and object keys: no NUL (text and jsonb refuse it: 22021 / 22P05) and no unpaired
//   UTF-16 surrogate (jsonb refuses the `\ud800` escape JSON.stringify writes for it; a text
//   column would silently store U+FFFD instead). checkJsonBody walks a whole parsed body, keys
//   included, so a record like `env` or `objects` is covered without a refinement per field;
//   `safeString()` is the same rule for strings that do not come in a JSON body (queries).
// - nesting: at most MAX_JSON_DEPTH levels, so walking a hostile body costs bounded work.
// - numbers: `int32()` for integer columns (a value past int4 made 22003 a 500).
// - dates: `saneDate()` for timestamps an agent reports about now.
import { z } from 'zod';

export const UNSAFE_TEXT = 'must not contain NUL bytes or unpaired UTF-16 surrogates';

/** A high surrogate not followed by a low one, or a low one not preceded by a high one. */
const LONE_SURROGATE = /[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;

/** True when `s` can be stored and logged as it is (no NUL, no lone surrogate). */
export const isSafeText = (s: string): boolean => !s.includes('\u0000') && !LONE_SURROGATE.test(s);

export const safeString = () => z.string().refine(isSafeText, UNSAFE_TEXT);

/** PostgreSQL's `integer`: what every count and size column is. */
export const INT32_MIN = -2_147_483_648;
export const INT32_MAX = 2_147_483_647;
export const int32 = () => z.number().int().min(INT32_MIN).max(INT32_MAX);

/**
 * Bounds of a timestamp an agent reports (a full sync, a GC pass): they happen now, and clocks
 * are off by minutes, not decades. The bounds also keep the value inside what both a JS Date and
 * timestamptz represent (year 0000 is neither), so a bad one is a 400, never a 22008 500.
 */
export const SANE_DATE_MIN = Date.UTC(2000, 0, 1);
export const SANE_DATE_MAX = Date.UTC(2100, 0, 1);
export const saneDate = () =>
  z.iso.datetime().refine((s) => {
    const t = Date.parse(s);
    return t >= SANE_DATE_MIN && t < SANE_DATE_MAX;
  }, 'must be a time between 2000-01-01 and 2100-01-01');

/**
 * Deepest nesting a request body may have. Our deepest schema (a canary's analysis) is 5 levels;
 * 32 leaves room for what comes and bounds the work of walking and validating hostile input.
 */
export const MAX_JSON_DEPTH = 32;

export interface UnsafeValue {
  /** Dotted path of the bad value (for a bad key: of the object holding it). */
  field: string;
  message: string;
}

/** Problems named per refused body: every field a client must fix, within a bounded answer. */
const MAX_PROBLEMS = 20;

/**
 * Every place in a parsed JSON value that breaks the rules above (at most MAX_PROBLEMS), in
 * path order; empty when the value is fine. Iterative, so no body, however deep, can overflow
 * the stack on the way to being refused.
 */
export function checkJsonBody(value: unknown): UnsafeValue[] {
  const out: UnsafeValue[] = [];
  const stack: { v: unknown; path: string[] }[] = [{ v: value, path: [] }];
  const name = (path: string[]) => (path.length ? path.join('.') : '(root)');
  while (stack.length && out.length < MAX_PROBLEMS) {
    const { v, path } = stack.pop()!;
    if (typeof v === 'string') {
      if (!isSafeText(v)) out.push({ field: name(path), message: UNSAFE_TEXT });
      continue;
    }
    if (v === null || typeof v !== 'object') continue;
    if (path.length >= MAX_JSON_DEPTH) {
      out.push({ field: name(path), message: `nested deeper than ${MAX_JSON_DEPTH} levels` });
      continue;
    }
    for (const [k, child] of Object.entries(v)) {
      // The key itself is not echoed: it is the hostile part.
      if (!isSafeText(k)) out.push({ field: name(path), message: `a key ${UNSAFE_TEXT}` });
      else stack.push({ v: child, path: [...path, k] });
    }
  }
  return out.sort((a, b) => (a.field < b.field ? -1 : a.field > b.field ? 1 : 0));
}

// The one duration parser, for command-line flags, environment variables and API bodies alike:
// `500ms`, `30s`, `5m`, `2h`, `90d`, compounds like `1m30s`, decimals like `1.5s`. A bare
// number is refused with a message naming the unit to add: `300` means 300 ms to one reader
// and 300 s to another (a `--deploy-timeout 300` used to end deploys after 0.3 s).

const UNIT_MS: Record<string, number> = { ms: 1, s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 };
const PART = /(\d+(?:\.\d+)?)(ms|s|m|h|d)/g;
const DURATION = /^(?:\d+(?:\.\d+)?(?:ms|s|m|h|d))+$/;

/** Milliseconds of a duration, or undefined when it is not one (a bare number included). */
export function parseDuration(value: string): number | undefined {
  const s = value.trim();
  if (!DURATION.test(s)) return undefined;
  let ms = 0;
  for (const [, n, unit] of s.matchAll(PART)) ms += Number(n) * UNIT_MS[unit!]!;
  return Math.round(ms);
}

/** Why `value` is not a duration, for the message a flag or a 400 shows. */
export function durationProblem(value: string): string {
  const s = value.trim();
  if (/^\d+(?:\.\d+)?$/.test(s)) return `"${s}" has no unit: add one, e.g. ${s}s (seconds), ${s}m (minutes) or ${s}ms (milliseconds)`;
  return `"${value}" is not a duration like 30s, 5m or 1m30s`;
}

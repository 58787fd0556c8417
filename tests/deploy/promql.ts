// The metric names a PromQL expression reads, for tests that hold alerts and dashboard panels
// to what ctrl and krane really export. Enough of PromQL for our expressions: label matchers,
// grouping lists, ranges, offsets and strings are dropped; of the names left, those called as
// functions and PromQL's keywords are not metrics.
const KEYWORDS = new Set(['and', 'or', 'unless', 'by', 'without', 'on', 'ignoring', 'group_left', 'group_right', 'offset', 'bool', 'inf', 'nan']);

export function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/"(?:[^"\\]|\\.)*"/g, '""')
    .replace(/\{[^}]*\}/g, ' ')
    .replace(/\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)/g, ' ')
    .replace(/\[[^\]]*\]/g, ' ')
    .replace(/\boffset\s+\S+/g, ' ');
  const names = new Set<string>();
  for (const m of bare.matchAll(/([a-zA-Z_:][a-zA-Z0-9_:]*)(\s*\()?/g)) {
    const [, name, call] = m;
    if (!call && !KEYWORDS.has(name!.toLowerCase())) names.add(name!);
  }
  return [...names].sort();
}

/** The metric families a /metrics text declares (`# TYPE name kind`). */
export function families(text: string): Map<string, string> {
  return new Map([...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].map((m) => [m[1]!, m[2]!]));
}

/** Whether `name` is a series of a declared family: itself, or a histogram's or summary's parts. */
export function exported(name: string, declared: Map<string, string>): boolean {
  if (declared.has(name)) return true;
  const base = name.replace(/_(bucket|sum|count)$/, '');
  return base !== name && ['histogram', 'summary'].includes(declared.get(base) ?? '');
}

// How list commands print, the way kubectl does: `-o table` (the default columns), `-o wide`
// (more of them), `-o json` and `-o yaml` (the API's answer unchanged; `--json` is `-o json`).
// A column is a header and a pure function of one row; tables keep kubectl's conventions: upper
// case headers, AGE as kubectl writes it (`45s`, `5m12s`, `3h`, `2d4h`), READY as `x/y`. Pure,
// so tests check the text without a server.
import { dump } from 'js-yaml';
import { usageError } from './errors';

export const OUTPUT_FORMATS = ['table', 'wide', 'json', 'yaml'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

export interface Column<T> {
  header: string;
  cell(row: T, now: number): string;
  /** Shown with `-o wide` only. */
  wide?: boolean;
  /** Changes with the clock alone (AGE, LAST SEEN): a watch does not reprint a row for it. */
  clock?: boolean;
}

/** The format asked for by `-o` and `--json` together; both at once must agree. */
export function outputFormat(o: { output?: string; json?: boolean }): OutputFormat {
  const given = o.output ?? (o.json ? 'json' : 'table');
  if (!(OUTPUT_FORMATS as readonly string[]).includes(given)) throw usageError(`-o must be one of ${OUTPUT_FORMATS.join(', ')}, not "${given}"`);
  if (o.json && given !== 'json') throw usageError(`--json is -o json; it cannot go with -o ${given}`);
  return given as OutputFormat;
}

/** kubectl's age (apimachinery's HumanDuration): precise while short, coarser as it grows. */
export function kubeAge(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 ? `${minutes}m${seconds % 60}s` : `${minutes}m`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 ? `${hours}h${minutes % 60}m` : `${hours}h`;
  if (hours < 48) return `${hours}h`;
  const days = Math.floor(hours / 24);
  if (hours < 24 * 8) return hours % 24 ? `${days}d${hours % 24}h` : `${days}d`;
  if (hours < 24 * 365 * 2) return `${days}d`;
  const years = Math.floor(days / 365);
  if (hours < 24 * 365 * 8) return days % 365 ? `${years}y${days % 365}d` : `${years}y`;
  return `${years}y`;
}

/** The AGE cell of a timestamp (`<unknown>` without one, as kubectl shows it). */
export function ageOf(iso: string | null | undefined, now: number): string {
  const t = iso ? Date.parse(iso) : NaN;
  return Number.isNaN(t) ? '<unknown>' : kubeAge(now - t);
}

/** `x/y`: how many of how many are ready. */
export const ready = (have: number, want: number): string => `${have}/${want}`;

export const columnsFor = <T>(columns: Column<T>[], format: OutputFormat): Column<T>[] => columns.filter((c) => format === 'wide' || !c.wide);

export const cellsOf = <T>(columns: Column<T>[], row: T, now: number): string[] => columns.map((c) => c.cell(row, now) || '<none>');

/** Widths of each column over the header and these rows (a watch keeps the first table's). */
export function widths(headers: string[], rows: string[][]): number[] {
  return headers.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
}

/** One table line: two spaces between columns, every column but the last padded to its width. */
export function line(cells: string[], w: number[]): string {
  return cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(w[i] ?? 0))).join('  ').trimEnd();
}

/** The answer as JSON (indented) or YAML, unchanged. */
export function document(value: unknown, format: 'json' | 'yaml'): string {
  return format === 'json' ? `${JSON.stringify(value, null, 2)}\n` : dump(value, { noRefs: true, lineWidth: -1 });
}

/**
 * A list as `format` prints it: the API's whole `answer` for json and yaml, else a table of
 * `rows`, or `empty` when there are none (kubectl's "No resources found" in our words).
 */
export function renderList<T>(format: OutputFormat, answer: unknown, rows: T[], columns: Column<T>[], now: number, empty: string): string {
  if (format === 'json' || format === 'yaml') return document(answer, format);
  if (rows.length === 0) return `${empty}\n`;
  const shown = columnsFor(columns, format);
  const headers = shown.map((c) => c.header);
  const cells = rows.map((r) => cellsOf(shown, r, now));
  const w = widths(headers, cells);
  return `${[headers, ...cells].map((c) => line(c, w)).join('\n')}\n`;
}

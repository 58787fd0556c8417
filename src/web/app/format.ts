// Text for times and sizes, the same everywhere on the page. Pure: `now` is passed in so the
// views re-render ages from one ticking clock and tests pin it.

const S = 1000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;

/** Compact elapsed time: 45s, 3m, 2h 5m, 4d 3h. */
export function span(ms: number): string {
  if (!Number.isFinite(ms)) return '–';
  const v = Math.max(0, ms);
  if (v < M) return `${Math.floor(v / S)}s`;
  if (v < H) return `${Math.floor(v / M)}m`;
  if (v < D) {
    const m = Math.floor((v % H) / M);
    return `${Math.floor(v / H)}h${m ? ` ${m}m` : ''}`;
  }
  const h = Math.floor((v % D) / H);
  return `${Math.floor(v / D)}d${h ? ` ${h}h` : ''}`;
}

export function age(iso: string | null | undefined, now: number): string {
  if (!iso) return '–';
  const t = Date.parse(iso);
  return Number.isNaN(t) ? '–' : span(now - t);
}

export function ago(iso: string | null | undefined, now: number, never = 'never'): string {
  if (!iso) return never;
  const t = Date.parse(iso);
  return Number.isNaN(t) ? never : `${span(now - t)} ago`;
}

/** A step's duration: 340 ms, 1.2 s, 2m 3s; "running" while it has not completed. */
export function duration(fromIso: string, toIso: string | null | undefined): string {
  if (!toIso) return 'running';
  const ms = Date.parse(toIso) - Date.parse(fromIso);
  if (!Number.isFinite(ms)) return '–';
  if (ms < S) return `${Math.max(0, Math.round(ms))} ms`;
  if (ms < M) return `${(ms / S).toFixed(1)} s`;
  return `${Math.floor(ms / M)}m ${Math.floor((ms % M) / S)}s`;
}

/** Local date and time in ISO-like form, unambiguous across locales. */
export function timestamp(iso: string | null | undefined): string {
  if (!iso) return '–';
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '–';
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${p(d.getMonth() + 1)}-${p(d.getDate())} ${p(d.getHours())}:${p(d.getMinutes())}:${p(d.getSeconds())}`;
}

export function plural(n: number, one: string, many = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

// Where command output goes. Commands write through this instead of process.stdout so tests
// capture it and can pretend to be a terminal, and so `--wait` knows whether it may redraw.
export interface Io {
  out(text: string): void;
  err(text: string): void;
  /** stdout is a terminal: progress is redrawn in place instead of appended. */
  isTTY: boolean;
  /** Terminal width; redrawn lines are cut to it, since a wrapped line breaks cursor movement. */
  columns: number;
}

/** Used when a terminal does not say how wide it is; wider than the classic 80 since the
 * progress lines carry a region, a bar and a reason. */
const FALLBACK_COLUMNS = 100;

export function processIo(): Io {
  return {
    out: (t) => void process.stdout.write(t),
    err: (t) => void process.stderr.write(t),
    isTTY: Boolean(process.stdout.isTTY),
    columns: process.stdout.columns || FALLBACK_COLUMNS,
  };
}

/** Captures output in memory, for tests and for callers that post-process it. */
export function memoryIo(opts: { isTTY?: boolean; columns?: number } = {}): Io & { stdout: () => string; stderr: () => string } {
  let out = '';
  let err = '';
  return {
    out: (t) => void (out += t),
    err: (t) => void (err += t),
    isTTY: opts.isTTY ?? false,
    columns: opts.columns ?? FALLBACK_COLUMNS,
    stdout: () => out,
    stderr: () => err,
  };
}

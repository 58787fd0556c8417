// Where command output goes. Commands write through this instead of process.stdout so tests
// capture it and can pretend to be a terminal, and so `--wait` knows whether it may redraw.
//
// Most of what the CLI prints was chosen by someone else: key and project names, audit targets
// (an anonymous caller's path), apply failures a cluster reported. A terminal obeys the control
// characters in it (erase rows, move the cursor, retitle the window, OSC 52 writes the
// clipboard), so every command's text passes printable() once, in printableIo, which the
// command context wraps around its sink; the CLI's own cursor movement (`--wait` and rollout
// redraws) is the only thing written raw, through control().
export interface Io {
  out(text: string): void;
  err(text: string): void;
  /** A terminal control sequence the CLI itself writes (a redraw); never text from the API. */
  control(sequence: string): void;
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
    control: (t) => void process.stdout.write(t),
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
    control: (t) => void (out += t),
    isTTY: opts.isTTY ?? false,
    columns: opts.columns ?? FALLBACK_COLUMNS,
    stdout: () => out,
    stderr: () => err,
  };
}

/**
 * C0 controls but newline and tab, DEL, C1 controls (0x9b is a one-byte CSI on some terminals),
 * and the bidirectional overrides and isolates, which reorder what a line shows.
 */
const UNPRINTABLE = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/g;

/** Text as a terminal shows it literally: each control character becomes a visible `\x1b`/`\u202e`. */
export function printable(text: string): string {
  return text.replace(UNPRINTABLE, (c) => {
    const code = c.charCodeAt(0);
    return code <= 0xff ? `\\x${code.toString(16).padStart(2, '0')}` : `\\u${code.toString(16).padStart(4, '0')}`;
  });
}

/** The sink every command writes to: its text through printable(), control() as it is. */
export function printableIo(io: Io): Io {
  return {
    out: (t) => io.out(printable(t)),
    err: (t) => io.err(printable(t)),
    control: (t) => io.control(t),
    get isTTY() {
      return io.isTTY;
    },
    get columns() {
      return io.columns;
    },
  };
}

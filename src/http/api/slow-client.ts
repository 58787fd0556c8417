// When an event socket's reader counts as too slow. Judged at one instant ("more than 1 MiB
// queued now"), a reader that keeps up was cut after any stall of ctrl: the events that piled
// up meanwhile arrive together (the database connection is read up to 2 MB at a time), are
// written to every socket in one go, and sit in ctrl's buffer until the kernel takes them. In
// CI a test's reading socket was closed that way. A reader is too slow when it stays behind:
// over the allowance for SLOW_FOR_MS, or so far behind that ctrl's memory is at stake.

/** Queued bytes a reader may have without it counting against it. */
export const ALLOWANCE_BYTES = 1 << 20;
/** Over the allowance for this long: the reader is not catching up. */
export const SLOW_FOR_MS = 5_000;
/** Queued past this, the reader is cut at once, whatever the time. */
export const HARD_CAP_BYTES = 16 << 20;

export interface Backlog {
  /** Since when the queue has been over the allowance, if it is now. */
  overSince: number | undefined;
}

/** Updates `b` for a send with `queued` bytes waiting; true when the reader is to be cut. */
export function tooSlow(b: Backlog, queued: number, now: number): boolean {
  if (queued <= ALLOWANCE_BYTES) {
    b.overSince = undefined;
    return false;
  }
  b.overSince ??= now;
  return queued > HARD_CAP_BYTES || now - b.overSince >= SLOW_FOR_MS;
}

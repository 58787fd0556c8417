// When an event socket's reader counts as too slow. Judged at one instant ("more than 1 MiB
// queued now"), a reader that keeps up could be cut after any stall of ctrl: the events that
// piled up meanwhile arrive together (the database connection is read up to 2 MB at a time),
// are written to every socket in one go, and sit in ctrl's buffer until the kernel takes them
// (the likeliest cause of a CI failure where a test's reading socket fell short; not
// confirmed). A reader is too slow when it stays behind: over the allowance for SLOW_FOR_MS, or
// past the hard cap. Checked at each send; a reader that never reads and gets no more events
// is dropped by the socket heartbeat instead (its ping waits behind the unread data).

/** Queued bytes a reader may have without it counting against it. */
export const ALLOWANCE_BYTES = 1 << 20;
/** Over the allowance for this long: the reader is not catching up. */
export const SLOW_FOR_MS = 5_000;
/**
 * Queued past this, the reader is cut at once, whatever the time: twice the biggest burst one
 * read of the database connection gives, and at most 4 MiB (plus one event) per socket, 80 MiB
 * for a credential's 20 sockets.
 */
export const HARD_CAP_BYTES = 4 << 20;

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

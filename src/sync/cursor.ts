// The wire cursor `epoch:txid:id`: opaque to agents, parsed only by ctrl. Positions compare
// as (txid, id) pairs of bigints; both columns exceed the JS number range, so they never pass
// through a Number.
import { AppError } from '../errors';
import type { Position } from '../store/changes';

export interface FeedCursor extends Position {
  epoch: string;
}

// xid8 is unsigned 64-bit (20 digits), the identity column signed 64-bit (19 digits).
const CURSOR_RE = /^([A-Za-z0-9_-]{1,64}):(\d{1,20}):(\d{1,19})$/;
const XID8_MAX = 2n ** 64n - 1n;
const BIGINT_MAX = 2n ** 63n - 1n;

export const encodeCursor = (epoch: string, p: Position) => `${epoch}:${p.txid}:${p.id}`;

/** Parses a wire cursor; throws a 400 AppError naming the problem. */
export function parseCursor(raw: string): FeedCursor {
  const m = CURSOR_RE.exec(raw);
  if (!m) {
    throw new AppError('ERR_FEED_CURSOR_INVALID', 'cursor must be the opaque EPOCH:TXID:ID token from a previous response', {
      details: [{ field: 'cursor', message: 'malformed cursor' }],
    });
  }
  const txid = BigInt(m[2]!);
  const id = BigInt(m[3]!);
  if (txid > XID8_MAX || id > BIGINT_MAX) {
    throw new AppError('ERR_FEED_CURSOR_INVALID', 'cursor position is out of range', {
      details: [{ field: 'cursor', message: 'position out of range' }],
    });
  }
  // Canonical decimal form, so "007" and "7" are the same position everywhere.
  return { epoch: m[1]!, txid: txid.toString(), id: id.toString() };
}

/**
 * Compares canonical decimal strings (no sign, no leading zeros: what Postgres' ::text and
 * parseCursor produce) without converting them: the longer number is larger, equal lengths
 * compare as text. This sits in every stream's buffer lookup, so it must not allocate.
 */
function compareDecimal(a: string, b: string): number {
  if (a.length !== b.length) return a.length < b.length ? -1 : 1;
  return a === b ? 0 : a < b ? -1 : 1;
}

/** Negative, zero or positive as a is before, at or after b in (txid, id) order. */
export function comparePositions(a: Position, b: Position): number {
  return compareDecimal(a.txid, b.txid) || compareDecimal(a.id, b.id);
}

export const maxPosition = (a: Position, b: Position) => (comparePositions(a, b) >= 0 ? a : b);

// Values cross the journal as { v: value } so `undefined` (a step that returns nothing)
// replays as undefined rather than null.
export type Encoded = { v?: unknown };

export function encode(value: unknown): string {
  return JSON.stringify(value === undefined ? {} : { v: value });
}

export function decode(stored: unknown): unknown {
  if (stored && typeof stored === 'object' && 'v' in stored) return (stored as { v: unknown }).v;
  return undefined;
}

// Kubernetes resource quantities → the integer units ctrl stores (millicores, MiB).
const BINARY: Record<string, number> = { Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30, Ti: 2 ** 40, Pi: 2 ** 50, Ei: 2 ** 60 };
const DECIMAL: Record<string, number> = { n: 1e-9, u: 1e-6, m: 1e-3, '': 1, k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18 };

/** Parses a quantity to its base unit (cores, bytes); NaN when malformed. */
export function parseQuantity(q: string | number | undefined): number {
  if (q === undefined) return NaN;
  if (typeof q === 'number') return q;
  const m = /^([+-]?[0-9.]+(?:[eE][+-]?\d+)?)([a-zA-Z]*)$/.exec(q.trim());
  if (!m) return NaN;
  const n = Number(m[1]);
  const suffix = m[2]!;
  if (suffix in BINARY) return n * BINARY[suffix]!;
  if (suffix in DECIMAL) return n * DECIMAL[suffix]!;
  return NaN;
}

export function toMillicores(q: string | number | undefined): number {
  const v = parseQuantity(q);
  return Number.isFinite(v) ? Math.round(v * 1000) : 0;
}

export function toMib(q: string | number | undefined): number {
  const v = parseQuantity(q);
  return Number.isFinite(v) ? Math.round(v / 2 ** 20) : 0;
}

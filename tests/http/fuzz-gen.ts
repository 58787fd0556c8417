// Request generators for the fuzz test (tests/http/fuzz.test.ts), read from ctrl's OpenAPI
// document: every path and method it lists, with bodies, queries and path parameters that have
// the documented shape and, here and there, a hostile leaf. Pure: data in, fast-check
// arbitraries out, so an endpoint added to the document is fuzzed without a line here.
import fc from 'fast-check';

/** Put into every hostile string and every env value: no log line may ever carry it. */
export const MARKER = 'fzmark7Qx';

type Schema = Record<string, any>;

/**
 * How values are made: `hostile` mixes hostile leaves in (about 1 in 5); without it a request
 * is clean, so the fuzzer also gets past validation and exercises what accepted requests do.
 * `hints` give valid values for fields by name (a region this ctrl knows, say), which a
 * schema's pattern alone cannot.
 */
export interface GenOptions {
  hostile: boolean;
  hints?: Record<string, fc.Arbitrary<unknown>>;
}

export interface Endpoint {
  method: string;
  /** Path template with {param}s. */
  path: string;
  params: { name: string; in: 'path' | 'query'; required: boolean; schema: Schema }[];
  body?: Schema;
}

export interface FuzzRequest {
  method: string;
  url: string;
  body?: unknown;
  /** Which endpoint of the document it came from (for the report). */
  endpoint: string;
}

export function endpointsOf(doc: { paths: Record<string, Record<string, any>> }): Endpoint[] {
  const out: Endpoint[] = [];
  for (const [path, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      out.push({
        method: method.toUpperCase(),
        path,
        params: (op.parameters ?? []) as Endpoint['params'],
        body: op.requestBody?.content?.['application/json']?.schema,
      });
    }
  }
  return out;
}

const marked = (s: string) => fc.nat(9999).map((n) => `${s}${MARKER}${n}`);

/** Deep nesting: an array or object this many levels down, with a marker at the bottom. */
const deep = fc.integer({ min: 30, max: 400 }).chain((depth) =>
  fc.boolean().chain((arrays) =>
    marked('deep').map((leaf) => {
      let v: unknown = leaf;
      for (let i = 0; i < depth; i++) v = arrays ? [v] : { d: v };
      return v;
    }),
  ),
);

/** What an attacker puts where a value goes. */
export const hostileLeaf: fc.Arbitrary<unknown> = fc.oneof(
  marked('nul\u0000'),
  marked('\ud800lone-high'),
  marked('lone-low\udfff'),
  marked('\u0000'),
  fc.integer({ min: 10_000, max: 200_000 }).chain((n) => marked('x'.repeat(n))),
  fc.constantFrom('0000-01-01T00:00:00Z', '9999-12-31T23:59:59.999Z', '2024-02-30T25:61:00Z', '-271821-04-20T00:00:00Z', '1970-01-01T00:00:00Z'),
  fc.constantFrom(3_000_000_000, -1, -2_147_483_649, 2 ** 31, 9_007_199_254_740_991, -9_007_199_254_740_991, 1e308, -1e308, 0.5, 5e-324),
  fc.constantFrom(null, true, false, 0, '', [], {}),
  deep,
);

/** A string of the schema's shape (pattern, enum, format, length), never carrying the marker. */
function validString(s: Schema): fc.Arbitrary<string> {
  if (s.format === 'date-time') return fc.date({ min: new Date('2001-01-01'), max: new Date('2099-01-01'), noInvalidDate: true }).map((d) => d.toISOString());
  if (s.format === 'uri') return fc.constantFrom('https://example.com/x', 'http://127.0.0.1:9/hook', 'https://[::ffff:0:7f00:1]/');
  const min = s.minLength ?? 0;
  const max = Math.min(s.maxLength ?? 24, 24);
  if (s.pattern) {
    return fc
      .stringMatching(new RegExp(s.pattern))
      .filter((v) => v.length >= min && v.length <= (s.maxLength ?? Infinity) && !v.includes(MARKER))
      .map((v) => v);
  }
  return fc.string({ minLength: min, maxLength: Math.max(min, max) });
}

function validNumber(s: Schema, integer: boolean): fc.Arbitrary<number> {
  const lo = s.minimum ?? (s.exclusiveMinimum !== undefined ? s.exclusiveMinimum + 1 : -1000);
  const hi = s.maximum ?? (s.exclusiveMaximum !== undefined ? s.exclusiveMaximum - 1 : 1000);
  const min = Math.max(lo, -1e9);
  const max = Math.min(hi, 1e9);
  if (integer) return fc.integer({ min: Math.ceil(min), max: Math.max(Math.ceil(min), Math.floor(max)) });
  return fc.double({ min, max, noNaN: true, noDefaultInfinity: true });
}

/**
 * A value of the schema's shape where each leaf is, with probability about 1 in 5, hostile,
 * and objects now and then carry an extra field (sometimes with a hostile name).
 */
export function valueOf(s: Schema | undefined, o: GenOptions, depth = 0, key = ''): fc.Arbitrary<unknown> {
  const leaf = (valid: fc.Arbitrary<unknown>) => (o.hostile ? fc.oneof({ arbitrary: valid, weight: 4 }, { arbitrary: hostileLeaf, weight: 1 }) : valid);
  const hint = o.hints?.[key];
  if (hint) return leaf(hint);
  if (!s || depth > 8) return o.hostile ? hostileLeaf : fc.constant(null);
  if (s.const !== undefined) return leaf(fc.constant(s.const));
  if (Array.isArray(s.enum)) return leaf(fc.constantFrom(...s.enum));
  const alternatives = s.anyOf ?? s.oneOf;
  if (Array.isArray(alternatives)) return fc.oneof(...alternatives.map((a: Schema) => valueOf(a, o, depth + 1, key)));
  const type = Array.isArray(s.type) ? s.type : [s.type];
  if (type.length > 1) return fc.oneof(...type.map((t: string) => valueOf({ ...s, type: t }, o, depth, key)));
  switch (type[0]) {
    case 'object':
      return objectOf(s, o, depth, key);
    case 'array': {
      const items = valueOf(s.items, o, depth + 1, key);
      return leaf(fc.array(items, { minLength: s.minItems ?? 0, maxLength: Math.min(s.maxItems ?? 3, 3) }));
    }
    case 'string':
      return leaf(validString(s));
    case 'integer':
      return leaf(validNumber(s, true));
    case 'number':
      return leaf(validNumber(s, false));
    case 'boolean':
      return leaf(fc.boolean());
    case 'null':
      return leaf(fc.constant(null));
    default:
      // `{}` (anything) and unrepresentable parts.
      return o.hostile ? fc.oneof(fc.string({ maxLength: 8 }), fc.integer(), hostileLeaf) : fc.oneof(fc.string({ maxLength: 8 }), fc.integer());
  }
}

function objectOf(s: Schema, o: GenOptions, depth: number, key: string): fc.Arbitrary<unknown> {
  const props = (s.properties ?? {}) as Record<string, Schema>;
  const required = new Set<string>(s.required ?? []);
  const fields: Record<string, fc.Arbitrary<unknown>> = {};
  for (const [k, v] of Object.entries(props)) fields[k] = valueOf(v, o, depth + 1, k);
  const known = fc.record(fields, { requiredKeys: [...required].filter((k) => k in props) });
  // A map (env, objects): keys of its own pattern; env values are secrets and carry the marker.
  const extra = s.additionalProperties && typeof s.additionalProperties === 'object'
    ? fc.dictionary(
        s.propertyNames?.pattern ? fc.stringMatching(new RegExp(s.propertyNames.pattern)).filter((k) => k.length <= 40) : fc.string({ minLength: 1, maxLength: 12 }),
        key === 'env' ? (o.hostile ? fc.oneof(marked('sk_live_'), hostileLeaf) : marked('sk_live_')) : valueOf(s.additionalProperties, o, depth + 1),
        { maxKeys: 4 },
      )
    : fc.constant({});
  if (!o.hostile) return fc.tuple(known, extra).map(([k, e]) => ({ ...e, ...(k as object) }));
  const stray = fc.option(fc.tuple(fc.oneof(fc.constantFrom('replica', '__proto__', 'constructor'), marked('k\u0000'), marked('k\ud800')), hostileLeaf), { freq: 6 });
  return fc.oneof(
    { arbitrary: fc.tuple(known, extra, stray).map(([k, e, x]) => ({ ...e, ...(k as object), ...(x ? { [x[0]]: x[1] } : {}) })), weight: 9 },
    { arbitrary: hostileLeaf, weight: 1 },
  );
}

/** A path parameter: an id-like string, or a hostile one, URL-encoded. */
const pathParam = fc.oneof(
  { arbitrary: fc.stringMatching(/^[a-z]{3}_[A-Za-z0-9]{4,20}$/), weight: 3 },
  { arbitrary: fc.constantFrom('default', 'current', '%', ' ', '.x'), weight: 1 },
  { arbitrary: fc.oneof(marked('p\u0000'), marked('\ud800'), fc.constant('x'.repeat(300))), weight: 1 },
);

function queryValue(s: Schema, o: GenOptions, name: string): fc.Arbitrary<string | undefined> {
  const valid = valueOf(s, o, 6, name).map((v) => (typeof v === 'string' ? v : JSON.stringify(v) ?? ''));
  if (!o.hostile) return fc.option(valid, { freq: 2 }).map((v) => v ?? undefined);
  return fc.option(
    fc.oneof(
      { arbitrary: valid, weight: 3 },
      { arbitrary: fc.oneof(marked('q\u0000'), fc.constant('-1'), fc.constant('99999999999')), weight: 1 },
    ),
    { freq: 2 },
  );
}

/** encodeURIComponent, except that a lone surrogate goes out as its raw 3-byte form (as a
 *  client that does not care sends it) instead of throwing. */
export function encodeHostile(s: string): string {
  let out = '';
  for (const ch of s) {
    const cp = ch.codePointAt(0)!;
    if (cp >= 0xd800 && cp <= 0xdfff) out += [0xe0 | (cp >> 12), 0x80 | ((cp >> 6) & 0x3f), 0x80 | (cp & 0x3f)].map((b) => `%${b.toString(16).toUpperCase()}`).join('');
    else out += encodeURIComponent(ch);
  }
  return out;
}

export function requestOf(e: Endpoint, o: GenOptions): fc.Arbitrary<FuzzRequest> {
  const pathParams = e.params.filter((p) => p.in === 'path');
  const queryParams = e.params.filter((p) => p.in === 'query');
  return fc
    .tuple(
      fc.tuple(...pathParams.map(() => (o.hostile ? pathParam : fc.stringMatching(/^[a-z]{3}_[A-Za-z0-9]{4,20}$/)))),
      fc.tuple(...queryParams.map((p) => queryValue(p.schema, o, p.name))),
      // fetch sends no body with GET; a POST without a documented body may still get one.
      e.method === 'GET' ? fc.constant(null) : e.body ? fc.option(valueOf(e.body, o), { freq: 12 }) : o.hostile ? fc.option(hostileLeaf, { freq: 2 }) : fc.constant(null),
    )
    .map(([pv, qv, body]) => {
      let path = e.path;
      pathParams.forEach((p, i) => (path = path.replace(`{${p.name}}`, encodeHostile(pv[i]!))));
      const qs = new URLSearchParams();
      queryParams.forEach((p, i) => qv[i] !== null && qv[i] !== undefined && qs.append(p.name, qv[i]!));
      const q = qs.toString();
      return { method: e.method, url: path + (q ? `?${q}` : ''), ...(body !== null && body !== undefined ? { body } : {}), endpoint: `${e.method} ${e.path}` };
    });
}

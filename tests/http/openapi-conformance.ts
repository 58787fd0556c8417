// Holds ctrl's answers to the OpenAPI document: `call` sends a request by its documented path
// template and checks a 2xx answer against the named schema the document gives for that method,
// path and status (strictly: a field the schema does not describe fails), and records what was
// covered. The typed client is generated from those schemas (scripts/gen-api-types.ts), so an
// answer that passes here is one the CLI and the web view are typed for.
import assert from 'node:assert/strict';
import type { z } from 'zod';
import { openApiDocument } from '../../src/http/api/openapi';
import * as R from '../../src/http/api/openapi-responses';
import * as T from '../../src/http/api/openapi-responses-tenancy';
import type { TestStack } from '../helpers/stack';

type Op = { responses?: Record<string, { content?: { 'application/json'?: { schema?: { $ref?: string } } } }> };

/** The zod schema of every named answer, by its component name. */
const byName = new Map<string, z.ZodType>();
for (const value of [...Object.values(R), ...Object.values(T)]) {
  const id = typeof value === 'object' && value !== null && 'safeParse' in value ? R.responses.get(value as z.ZodType)?.id : undefined;
  if (id) byName.set(id, value as z.ZodType);
}

/** The fleet rollout's answers, which openapi-responses-rollout.test.ts covers (the rest: openapi-responses.test.ts). */
export const ROLLOUT_PATHS = /^\w+ \/v1\/sentinel-rollouts/;

/** `METHOD /path/{template} STATUS` → the component name of its answer, for every public path. */
export function documentedAnswers(): Map<string, string> {
  const doc = openApiDocument() as { paths: Record<string, Record<string, Op>> };
  const out = new Map<string, string>();
  for (const [path, item] of Object.entries(doc.paths)) {
    if (path.startsWith('/v1/cluster/')) continue;
    for (const [method, op] of Object.entries(item)) {
      for (const [status, r] of Object.entries(op.responses ?? {})) {
        const ref = r.content?.['application/json']?.schema?.$ref;
        if (ref) out.set(`${method.toUpperCase()} ${path} ${status}`, ref.split('/').pop()!);
      }
    }
  }
  return out;
}

export interface Conformance {
  call(method: string, template: string, opts?: { params?: Record<string, string>; query?: Record<string, string>; body?: unknown; token?: string }): Promise<{ status: number; body: any }>;
  /** Documented answers seen so far. */
  covered: Set<string>;
}

export function conformance(stack: TestStack): Conformance {
  const documented = documentedAnswers();
  const covered = new Set<string>();
  return {
    covered,
    async call(method, template, opts = {}) {
      let path = template.replace(/\{(\w+)\}/g, (_, k: string) => encodeURIComponent(opts.params?.[k] ?? assert.fail(`no value for {${k}} of ${template}`)));
      if (opts.query) path += `?${new URLSearchParams(opts.query)}`;
      const r = await stack.api(path, { method, ...(opts.body !== undefined ? { body: opts.body } : {}), ...(opts.token ? { token: opts.token } : {}) });
      if (r.status < 200 || r.status > 299) return r;
      const key = `${method} ${template} ${r.status}`;
      const name = documented.get(key);
      assert.ok(name, `${key} answered ${JSON.stringify(r.body).slice(0, 300)} but the document describes no such answer`);
      const schema = byName.get(name);
      assert.ok(schema, `no schema named ${name}`);
      const parsed = schema.safeParse(r.body);
      assert.ok(parsed.success, `${key}: the answer does not match ${name}: ${parsed.success ? '' : JSON.stringify(parsed.error.issues.slice(0, 8))}\n${JSON.stringify(r.body).slice(0, 1500)}`);
      covered.add(key);
      return r;
    },
  };
}

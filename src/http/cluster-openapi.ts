// The cluster API (what krane calls, with an agent token) in the OpenAPI document, described
// from the same zod schemas its routes validate with, as the public API is (api/openapi.ts).
// Agents are its only clients; it is documented so operators can read what crosses the wire
// and so tests that walk the document (tests/http/fuzz.test.ts) reach every route of ctrl.
import { z } from 'zod';
import { Heartbeat } from '../sync/liveness';
import { DeploymentStatusReport, RegionStatusReport, SentinelStatusReport } from '../sync/wire';
import { ChangesQuery } from './cluster-feed';

const json = (schema: z.ZodType) => z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
const security = [{ agentToken: [] }];
const responses = (ok: string) => ({
  '200': { description: ok },
  '400': { description: 'invalid input; details name each bad field' },
  '401': { description: 'missing or invalid agent token' },
  '403': { description: 'the token serves another region (or is the admin token)' },
});
const report = (summary: string, schema: z.ZodType) => ({
  post: { summary, security, requestBody: { required: true, content: { 'application/json': { schema: json(schema) } } }, responses: responses('accepted') },
});
const idParam = { name: 'id', in: 'path', required: true, schema: { type: 'string' } };

function queryParams(schema: z.ZodObject) {
  const js = json(schema) as { properties?: Record<string, unknown>; required?: string[] };
  return Object.entries(js.properties ?? {}).map(([name, s]) => ({ name, in: 'query', required: js.required?.includes(name) ?? false, schema: s }));
}

export const clusterSecurityScheme = { agentToken: { type: 'http', scheme: 'bearer', description: 'an agent token (one region)' } };

export function clusterPaths(): Record<string, unknown> {
  return {
    '/v1/cluster/changes': {
      get: { summary: 'the change feed (NDJSON long poll); without a cursor a full sync first', security, parameters: queryParams(ChangesQuery), responses: responses('application/x-ndjson stream') },
    },
    '/v1/cluster/deployments/{id}/desired': { get: { summary: "a deployment's desired state in the token's region; 404 = delete", security, parameters: [idParam], responses: responses('desired state') } },
    '/v1/cluster/sentinels/{id}/desired': { get: { summary: "a sentinel's desired state; 404 = delete", security, parameters: [idParam], responses: responses('desired state') } },
    '/v1/cluster/deployments/status': report('instances and apply outcomes of deployments', DeploymentStatusReport),
    '/v1/cluster/sentinels/status': report('observed sentinel state and apply outcomes', SentinelStatusReport),
    '/v1/cluster/region/status': report("the region's GC brake", RegionStatusReport),
    '/v1/cluster/heartbeat': report("krane's sign of life: agent, leader flag, cursor, object counts", Heartbeat),
  };
}

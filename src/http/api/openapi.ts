// GET /openapi.json: the public API described from the same zod schemas that validate it, so
// the document cannot drift from what the server accepts; its answers are described by the
// schemas of openapi-responses*.ts (held to the server by tests/http/openapi-responses.test.ts),
// from which the CLI's and the web view's types are generated (scripts/gen-api-types.ts).
import { z } from 'zod';
import type { FastifyInstance } from 'fastify';
import { clusterPaths, clusterSecurityScheme } from '../cluster-openapi';
import { CreateDeploymentBody, ListDeploymentsQuery, ListInvocationsQuery, ListSentinelsQuery, RolloutCurrentQuery, RolloutSentinelsQuery, SentinelDeployBody, StartRolloutBody } from './schemas';
import { AuditQuery, CreateEnvironmentBody, CreateKeyBody, CreateProjectBody, CreateWorkspaceBody } from './tenancy-schemas';
import { versionPaths } from './openapi-versions';
import * as R from './openapi-responses';
import * as T from './openapi-responses-tenancy';
import { answer, responseSchemas } from './openapi-refs';

const json = (schema: z.ZodType) => z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });

function queryParams(schema: z.ZodObject) {
  const js = json(schema) as { properties?: Record<string, unknown>; required?: string[] };
  return Object.entries(js.properties ?? {}).map(([name, s]) => ({ name, in: 'query', required: js.required?.includes(name) ?? false, schema: s }));
}

const idParam = { name: 'id', in: 'path', required: true, schema: { type: 'string' } };
/** src/http/idempotency.ts: a retried create answers with what the first call made. */
const idempotencyKey = {
  name: 'Idempotency-Key',
  in: 'header',
  required: false,
  description: 'a retry with the same key answers with the deployment the first call created (a day; another request with the key is 422)',
  schema: { type: 'string', pattern: '^[A-Za-z0-9._:-]{8,128}$' },
};
const errorSchema = {
  type: 'object',
  properties: {
    error: {
      type: 'object',
      properties: {
        code: { type: 'string' },
        message: { type: 'string' },
        details: { type: 'array', items: { type: 'object', properties: { field: { type: 'string' }, message: { type: 'string' } } } },
      },
    },
  },
};
const errors = {
  '400': { description: 'invalid input; details name each bad field', content: { 'application/json': { schema: errorSchema } } },
  '401': { description: 'missing or invalid token', content: { 'application/json': { schema: errorSchema } } },
};
/** The creates that take an Idempotency-Key answer 422 when the key came with another request. */
const keyReused = { '422': { description: 'ERR_IDEMPOTENCY_KEY_REUSED: this Idempotency-Key was sent with another request', content: { 'application/json': { schema: errorSchema } } } };
const ok = (description: string, schema?: z.ZodType) => ({ ...answer('200', description, schema), ...errors });
const created = (description: string, schema?: z.ZodType) => ({ ...answer('201', description, schema), ...errors });
const accepted = (description: string, schema?: z.ZodType) => ({ ...answer('202', description, schema), ...errors });
const body = (schema: z.ZodType) => ({ required: true, content: { 'application/json': { schema: json(schema) } } });

// Over 80 lines: the document's path table, one entry per route, read top to bottom like the
// API it describes.
export function openApiDocument(): Record<string, unknown> {
  return {
    openapi: '3.1.0',
    info: { title: 'unkey-infra control plane', version: '1' },
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer' }, ...clusterSecurityScheme }, schemas: responseSchemas() },
    security: [{ bearer: [] }],
    paths: {
      '/v1/deployments': {
        post: { summary: 'create a deployment', parameters: [idempotencyKey], requestBody: body(CreateDeploymentBody), responses: { ...accepted('created; the deploy workflow runs', R.DeploymentCreated), ...keyReused } },
        get: { summary: 'list deployments of an environment', parameters: queryParams(ListDeploymentsQuery), responses: ok('deployments', R.DeploymentList) },
      },
      '/v1/deployments/{id}': { get: { summary: 'status, regions, instances, domains, steps, the environment\'s sentinels in its regions', parameters: [idParam], responses: ok('deployment', R.DeploymentDetail) } },
      '/v1/deployments/{id}/stop': { post: { summary: 'stop (desired state stopped)', parameters: [idParam], responses: ok('stopped', R.DesiredStateChanged) } },
      '/v1/deployments/{id}/start': { post: { summary: 'start a stopped deployment', parameters: [idParam], responses: ok('starting', R.DesiredStateChanged) } },
      '/v1/deployments/{id}/rollback': { post: { summary: 'new deployment from this one\'s config', parameters: [idParam, idempotencyKey], responses: { ...accepted('rollback deployment created', R.RollbackCreated), ...keyReused } } },
      '/v1/deployments/{id}/promote': {
        post: {
          summary: 'point the environment\'s domains and traffic here (409 while a region it runs in is offline); a canary or blue-green in progress skips to 100% (`promoting`) once every region is online and ready',
          parameters: [idParam],
          responses: ok('promoted', R.Promoted),
        },
      },
      '/v1/deployments/{id}/abort': {
        post: { summary: 'roll a canary or blue-green in progress back to the stable deployment (ends rolled_back)', parameters: [idParam], responses: accepted('abort requested', R.AbortRequested) },
      },
      '/v1/environments/{id}/traffic': {
        get: { summary: 'the environment\'s routing table: hostname and weighted backends (weights sum to 100)', parameters: [idParam], responses: ok('traffic', R.Traffic) },
      },
      '/v1/sentinels': { get: { summary: 'list sentinels', parameters: queryParams(ListSentinelsQuery), responses: ok('sentinels', R.SentinelList) } },
      '/v1/sentinels/{id}/deploy': {
        post: {
          summary: 'deploy a sentinel (merge semantics); waits for READY/FAILED unless ?wait=false',
          parameters: [idParam, { name: 'wait', in: 'query', required: false, schema: { type: 'string', enum: ['true', 'false'] } }],
          requestBody: body(SentinelDeployBody),
          responses: { ...ok('READY or FAILED', R.SentinelDeployResult), ...answer('202', 'queued (?wait=false)', R.SentinelDeployResult) },
        },
      },
      '/v1/sentinel-rollouts': { post: { summary: 'start a fleet-wide sentinel image rollout in waves', requestBody: body(StartRolloutBody), responses: accepted('rollout started', R.RolloutSummary) } },
      '/v1/sentinel-rollouts/current': {
        get: { summary: 'the current rollout: state, per-wave counts, first pages of succeeded/failed/skipped ids (?list= pages one)', parameters: queryParams(RolloutCurrentQuery), responses: ok('rollout', R.RolloutCurrent) },
      },
      '/v1/sentinel-rollouts/current/sentinels': {
        get: { summary: "the current rollout's sentinels (wave, outcome, reason, previous image) in keyset pages", parameters: queryParams(RolloutSentinelsQuery), responses: ok('sentinels', R.RolloutSentinels) },
      },
      '/v1/sentinel-rollouts/current/resume': { post: { summary: 'resume a paused rollout, skipping the failed wave', responses: ok('resumed', R.RolloutSummary) } },
      '/v1/sentinel-rollouts/current/cancel': { post: { summary: 'cancel; the running wave finishes, no further wave starts', responses: { ...ok('cancelled', R.RolloutSummary), ...answer('202', 'queued (?wait=false)', R.InvocationQueued) } } },
      '/v1/sentinel-rollouts/current/rollback': { post: { summary: 'revert every succeeded sentinel to its previous image', responses: { ...ok('rolled back', R.RolloutSummary), ...answer('202', 'queued (?wait=false)', R.InvocationQueued) } } },
      '/v1/invocations': { get: { summary: 'list workflow invocations', parameters: queryParams(ListInvocationsQuery), responses: ok('invocations', R.InvocationList) } },
      '/v1/invocations/{id}': { get: { summary: 'one invocation with its journal', parameters: [idParam], responses: ok('invocation', R.InvocationDetail) } },
      '/v1/invocations/{id}/cancel': { post: { summary: 'cancel an invocation', parameters: [idParam], responses: ok('cancel requested', R.InvocationCancelled) } },
      '/v1/regions': { get: { summary: 'every region with an agent token: liveness, lag, leader, last full sync, object counts, drift repaired (drift: { repaired, lastAt, lastObject }), apply failures', responses: ok('regions', R.RegionList) } },
      // Tenants, keys and the audit trail (issue 26). A key's missing permission is 403
      // ERR_FORBIDDEN naming it; a row outside its scope is 404.
      '/v1/workspaces': {
        post: { summary: 'create a workspace (admin token only)', requestBody: body(CreateWorkspaceBody), responses: created('workspace', T.Workspace) },
        get: { summary: 'workspaces the caller may see', responses: ok('workspaces', T.WorkspaceList) },
      },
      '/v1/workspaces/{id}': {
        get: { summary: 'one workspace', parameters: [idParam], responses: ok('workspace', T.Workspace) },
        delete: { summary: 'delete a workspace (409 while anything runs): removes its environments\' sentinels, policies and routes through the outbox, revokes its keys', parameters: [idParam], responses: ok('deleted', T.ScopeDeleted) },
      },
      '/v1/workspaces/{id}/projects': {
        post: { summary: 'create a project (and its app)', parameters: [idParam], requestBody: body(CreateProjectBody), responses: created('project', T.Project) },
        get: { summary: 'projects of a workspace', parameters: [idParam], responses: ok('projects', T.ProjectList) },
      },
      '/v1/projects/{id}': {
        get: { summary: 'one project', parameters: [idParam], responses: ok('project', T.Project) },
        delete: { summary: 'delete a project (409 while anything runs), like a workspace', parameters: [idParam], responses: ok('deleted', T.ScopeDeleted) },
      },
      '/v1/projects/{id}/environments': {
        post: { summary: 'create an environment: slug, regions, hostname', parameters: [idParam], requestBody: body(CreateEnvironmentBody), responses: created('environment', T.Environment) },
        get: { summary: 'environments of a project', parameters: [idParam], responses: ok('environments', T.EnvironmentList) },
      },
      '/v1/environments/{id}': {
        get: { summary: 'one environment: slug, regions, hostname', parameters: [idParam], responses: ok('environment', T.Environment) },
        delete: { summary: 'delete an environment (409 while anything runs): its sentinels, policies and routes are removed through the outbox', parameters: [idParam], responses: ok('deleted', T.ScopeDeleted) },
      },
      '/v1/keys': {
        post: { summary: 'create a scoped API key; the key (uik_…) is in this answer only', requestBody: body(CreateKeyBody), responses: created('{ id, key, … }', T.ApiKeyCreated) },
        get: { summary: 'keys of the caller\'s scope, without secrets', responses: ok('keys', T.ApiKeyList) },
      },
      '/v1/keys/self': { get: { summary: 'the caller: admin or key, its scope and permissions', responses: ok('principal', T.Principal) } },
      '/v1/keys/{id}': { delete: { summary: 'revoke a key at once: its open WebSockets and calls end', parameters: [idParam], responses: ok('revoked', T.ApiKeyRevoked) } },
      '/v1/audit': { get: { summary: 'audit rows, newest first, keyset pages (?cursor= from `next`)', parameters: queryParams(AuditQuery), responses: ok('{ entries, next }', T.AuditPage) } },
      ...versionPaths,
      ...clusterPaths(),
      '/v1/events': { get: { summary: 'WebSocket of live JSON events (?deploymentId=, ?type=); the token as the Authorization header or the subprotocol base64url.bearer.<token>', responses: { '101': { description: 'switching protocols' } } } },
    },
  };
}

export function openApiRoute(app: FastifyInstance): void {
  const doc = openApiDocument();
  app.get('/openapi.json', async () => doc);
}

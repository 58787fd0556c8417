// The OpenAPI paths of versions, rollback by version, quarantine and feature flags (issue 25),
// from the zod schemas that validate them (openapi.ts spreads them into the document).
import { z } from 'zod';
import { EnvironmentRollbackBody, FeaturesBody, VersionsQuery } from './schemas';
import { answer } from './openapi-refs';
import * as R from './openapi-responses';

const json = (schema: z.ZodType) => z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' });
const idParam = { name: 'id', in: 'path', required: true, schema: { type: 'string' } };
const imageParam = { name: 'image', in: 'path', required: true, description: 'image reference or sha256 digest, URL-encoded', schema: { type: 'string' } };
const limitParam = { name: 'limit', in: 'query', required: false, schema: (json(VersionsQuery) as { properties: Record<string, unknown> }).properties.limit };
const body = (schema: z.ZodType) => ({ required: true, content: { 'application/json': { schema: json(schema) } } });
const r = (code: string, description: string, more: Record<string, { description: string }> = {}, schema?: z.ZodType) => ({ ...answer(code, description, schema), '400': { description: 'invalid input; details name each bad field' }, '401': { description: 'missing or invalid token' }, ...more });
const notFound = { '404': { description: 'no such environment, workspace, version or image' } };

export const versionPaths = {
  '/v1/environments/{id}/versions': {
    get: { summary: "the environment's versions, newest first: version, deploymentId, image, status, createdAt, rollbackOf, rolledBackBy", parameters: [idParam, limitParam], responses: r('200', 'versions', notFound, R.VersionList) },
  },
  '/v1/environments/{id}/rollback': {
    post: {
      summary: "a new deployment from a version's (or deployment's) config and image; a quarantined image needs force",
      parameters: [idParam],
      requestBody: body(EnvironmentRollbackBody),
      responses: r('202', 'rollback deployment created: { id, status, version, rollbackOf }', { ...notFound, '409': { description: 'ERR_IMAGE_QUARANTINED' }, '403': { description: 'ERR_FEATURE_DISABLED' } }, R.VersionRollbackCreated),
    },
  },
  '/v1/environments/{id}/quarantine': { get: { summary: 'images quarantined in the environment, with the deployment that failed and why', parameters: [idParam], responses: r('200', 'quarantined images', notFound, R.QuarantineList) } },
  '/v1/environments/{id}/quarantine/{image}': { delete: { summary: 'release a quarantined image', parameters: [idParam, imageParam], responses: r('200', 'released', notFound, R.QuarantineReleased) } },
  '/v1/workspaces/{id}/features': {
    get: { summary: "the workspace's feature flags in effect (its own, else ctrl's --default-features)", parameters: [idParam], responses: r('200', '{ multiRegion, autoScaling, blueGreen, canary }', notFound, R.Features) },
    put: { summary: 'turn feature flags on or off (admin)', parameters: [idParam], requestBody: body(FeaturesBody), responses: r('200', 'the flags in effect', notFound, R.Features) },
  },
};

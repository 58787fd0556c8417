// What the tenancy, key and audit routes answer with (issue 26), named in the same registry as
// the rest of the answers (openapi-responses.ts says why they are strict and how they are held
// to the server).
import { z } from 'zod';
import { PERMISSIONS } from '../permissions';
import { named, Timestamp } from './openapi-responses';

const Permission = z.enum(PERMISSIONS);

export const Workspace = named('Workspace', z.strictObject({ id: z.string(), name: z.string(), createdAt: Timestamp }));
export const Project = named('Project', z.strictObject({ id: z.string(), workspaceId: z.string(), name: z.string(), createdAt: Timestamp }));
export const Environment = named(
  'Environment',
  z.strictObject({ id: z.string(), workspaceId: z.string(), projectId: z.string(), slug: z.string(), regions: z.array(z.string()), hostname: z.string(), createdAt: Timestamp }),
);
export const WorkspaceList = named('WorkspaceList', z.strictObject({ workspaces: z.array(Workspace) }));
export const ProjectList = named('ProjectList', z.strictObject({ projects: z.array(Project) }));
export const EnvironmentList = named('EnvironmentList', z.strictObject({ environments: z.array(Environment) }));
/** A deleted workspace, project or environment, with what went with it. */
export const ScopeDeleted = named(
  'ScopeDeleted',
  z.strictObject({
    id: z.string(),
    deleted: z.literal(true),
    removed: z.strictObject({ environments: z.number().int(), sentinels: z.number().int(), policies: z.number().int(), keys: z.number().int() }),
  }),
);

const KeyScope = z.strictObject({ workspaceId: z.string(), projectId: z.string().nullable(), environmentId: z.string().nullable() });
export const ApiKey = named(
  'ApiKey',
  z.strictObject({
    id: z.string(),
    name: z.string(),
    scope: KeyScope,
    permissions: z.array(Permission),
    expiresAt: Timestamp.nullable(),
    createdBy: z.string(),
    createdAt: Timestamp,
    revokedAt: Timestamp.nullable(),
  }),
);
/** The one answer that carries the key itself (`uik_…`). */
export const ApiKeyCreated = named('ApiKeyCreated', ApiKey.extend({ key: z.string() }));
export const ApiKeyList = named('ApiKeyList', z.strictObject({ keys: z.array(ApiKey) }));
/** A revoked key, with the keys it had made (and they in turn), revoked with it: none outlives its creator. */
export const ApiKeyRevoked = named('ApiKeyRevoked', z.strictObject({ id: z.string(), revoked: z.literal(true), alsoRevoked: z.array(z.string()) }));
export const Principal = named(
  'Principal',
  z.strictObject({ type: z.enum(['admin', 'key']), id: z.string().nullable(), scope: KeyScope.nullable(), permissions: z.array(Permission), unscoped: z.boolean() }),
);

export const AuditEntry = named(
  'AuditEntry',
  z.strictObject({
    id: z.string(),
    at: Timestamp,
    actor: z.strictObject({ type: z.string(), id: z.string().nullable() }),
    action: z.string(),
    target: z.string().nullable(),
    outcome: z.string(),
    requestId: z.string().nullable(),
    traceId: z.string().nullable(),
    sourceIp: z.string().nullable(),
    scope: z.strictObject({ workspaceId: z.string().nullable(), projectId: z.string().nullable(), environmentId: z.string().nullable() }),
  }),
);
export const AuditPage = named('AuditPage', z.strictObject({ entries: z.array(AuditEntry), next: z.string().nullable() }));

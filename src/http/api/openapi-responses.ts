// What the public API answers with, as zod schemas the OpenAPI document carries under
// components.schemas (openapi.ts refers to them by name). The typed client of the CLI and the
// web view is generated from that document (scripts/gen-api-types.ts), so these schemas are the
// one description of the answers both read. Objects are strict: tests/http/openapi-responses
// .test.ts checks every documented answer of a running stack against them, and a field the
// server sends that is not described here fails it, so the document cannot fall behind the
// handlers. Timestamps are ISO strings (fastify serialises Dates so).
import { z } from 'zod';
import { DEPLOYMENT_STATUSES, TOPOLOGY_STATUSES } from '../../store/deployments';
import { INSTANCE_STATUSES } from '../../store/instances';
import { SENTINEL_DEPLOY_STATUSES, SENTINEL_HEALTH } from '../../store/sentinels';
import { Strategy } from '../../workflow/progressive/strategy';
import { ROLLOUT_STATES } from '../../workflow/fleet/rollout';

/** The named schemas, by the name the document gives them. */
export const responses = z.registry<{ id: string }>();
export const named = <T extends z.ZodType>(id: string, schema: T): T => {
  responses.add(schema, { id });
  return schema;
};

export const Timestamp = z.string().meta({ format: 'date-time' });
const Id = z.string();
const Ref = z.strictObject({ deploymentId: Id, version: z.string() });

export const DeploymentStatus = named('DeploymentStatus', z.enum(DEPLOYMENT_STATUSES));

export const DeploymentSummary = named(
  'DeploymentSummary',
  z.strictObject({
    id: Id,
    status: DeploymentStatus,
    desiredState: z.enum(['running', 'stopped']),
    error: z.string().nullable(),
    image: z.string().nullable(),
    buildContext: z.string().nullable(),
    regions: z.array(z.string()),
    replicas: z.number().int(),
    cpuMillicores: z.number().int(),
    memoryMib: z.number().int(),
    port: z.number().int(),
    command: z.array(z.string()),
    /** Names only: env values are secrets and go to krane alone. */
    envKeys: z.array(z.string()),
    readOnlyRootFilesystem: z.boolean(),
    workspaceId: Id,
    projectId: Id,
    appId: Id,
    environmentId: Id,
    rolledBackFrom: Id.nullable(),
    version: z.string(),
    rollbackOf: Id.nullable(),
    autoscaling: z.strictObject({ minReplicas: z.number().int(), maxReplicas: z.number().int(), cpuUtilization: z.number().int() }).nullable(),
    strategy: named('Strategy', Strategy),
    traceId: z.string().nullable(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
);

export const RegionTopology = named(
  'RegionTopology',
  z.strictObject({
    region: z.string(),
    desiredStatus: z.enum(['running', 'stopped']),
    wanted: z.number().int(),
    running: z.number().int(),
    pending: z.number().int(),
    status: z.enum(TOPOLOGY_STATUSES),
    failed: z.array(z.strictObject({ podName: z.string(), reason: z.string().nullable() })),
    /** The cluster refused this region's desired state (null: it did not). */
    applyFailure: z.strictObject({ code: z.string(), reason: z.string() }).nullable(),
    autoscaling: z
      .strictObject({ min: z.number().int(), max: z.number().int(), current: z.number().int().nullable(), desired: z.number().int().nullable(), cpuUtilization: z.number().nullable() })
      .nullable(),
    regionStatus: z.enum(['online', 'offline', 'never_seen']).nullable(),
    regionLastSeenAt: Timestamp.nullable(),
  }),
);

/** One analysis verdict with its evidence; the compare judge's evidence has more fields (API.md). */
export const AnalysisCheck = named(
  'AnalysisCheck',
  z.looseObject({ at: Timestamp, judge: z.enum(['threshold', 'compare']), region: z.string().nullable(), verdict: z.enum(['pass', 'fail', 'inconclusive']) }),
);

export const DeploymentDetail = named(
  'DeploymentDetail',
  DeploymentSummary.extend({
    quarantined: z.strictObject({ reason: z.string(), deploymentId: Id }).nullable(),
    topology: z.array(RegionTopology),
    instances: z.array(
      z.strictObject({ region: z.string(), podName: z.string(), address: z.string().nullable(), status: z.enum(INSTANCE_STATUSES), reason: z.string().nullable(), updatedAt: Timestamp }),
    ),
    domains: z.array(z.strictObject({ hostname: z.string(), kind: z.string() })),
    steps: z.array(
      z.strictObject({
        name: z.string(),
        kind: z.string(),
        status: z.string(),
        failure: z.strictObject({ name: z.string(), message: z.string(), code: z.string() }).nullable(),
        createdAt: Timestamp,
        completedAt: Timestamp.nullable(),
      }),
    ),
    invocations: z.array(z.strictObject({ id: Id, handler: z.string(), status: z.string(), createdAt: Timestamp })),
    analysis: z.strictObject({ checks: z.array(AnalysisCheck) }),
    /** The environment's sentinels in the deployment's regions (issue 33): a deploy waits only
     *  for those it created, so one still converging shows here instead of holding it. */
    sentinels: z.array(
      z.strictObject({
        id: Id,
        region: z.string(),
        image: z.string(),
        runningImage: z.string().nullable(),
        deployStatus: z.enum(SENTINEL_DEPLOY_STATUSES),
        health: z.enum(SENTINEL_HEALTH),
        converged: z.boolean(),
      }),
    ),
  }),
);

export const DeploymentList = named('DeploymentList', z.strictObject({ deployments: z.array(DeploymentSummary) }));
export const DeploymentCreated = named('DeploymentCreated', z.strictObject({ id: Id, status: DeploymentStatus, version: z.string(), regions: z.array(z.string()) }));
export const DesiredStateChanged = named(
  'DesiredStateChanged',
  z.strictObject({ id: Id, desiredState: z.enum(['running', 'stopped']), changed: z.boolean(), generation: z.number().int().optional() }),
);
export const RollbackCreated = named('RollbackCreated', z.strictObject({ id: Id, status: DeploymentStatus, rolledBackFrom: Id }));
export const Promoted = named('Promoted', z.strictObject({ deploymentId: Id, hostnames: z.array(z.string()), promoting: z.literal(true).optional() }));
export const AbortRequested = named('AbortRequested', z.strictObject({ deploymentId: Id, aborting: z.literal(true) }));

export const Traffic = named(
  'Traffic',
  z.strictObject({ environmentId: Id, hostname: z.string(), backends: z.array(z.strictObject({ deploymentId: Id, weight: z.number() })) }),
);

export const SentinelView = named(
  'SentinelView',
  z.strictObject({
    id: Id,
    workspaceId: Id,
    projectId: Id,
    appId: Id,
    environmentId: Id,
    region: z.string(),
    image: z.string(),
    replicas: z.number().int(),
    cpuMillicores: z.number().int(),
    memoryMib: z.number().int(),
    desiredState: z.enum(['running', 'stopped']),
    availableReplicas: z.number().int(),
    updatedReplicas: z.number().int(),
    readyReplicas: z.number().int(),
    observedGeneration: z.number(),
    runningImage: z.string().nullable(),
    health: z.enum(SENTINEL_HEALTH),
    observedSpecHash: z.string().nullable(),
    deployStatus: z.enum(SENTINEL_DEPLOY_STATUSES),
    createdAt: Timestamp,
    updatedAt: Timestamp,
  }),
);
export const SentinelList = named('SentinelList', z.strictObject({ sentinels: z.array(SentinelView), next: Id.nullable() }));
export const SentinelDeployResult = named(
  'SentinelDeployResult',
  z.strictObject({
    sentinelId: Id,
    status: z.enum(['READY', 'FAILED']).optional(),
    image: z.string().optional(),
    reason: z.string().optional(),
    /** Instead of status, with ?wait=false. */
    invocationId: Id.optional(),
  }),
);

const CodedError = z.strictObject({ name: z.string(), message: z.string(), code: z.string() });
const InvocationStatus = z.enum(['scheduled', 'queued', 'ready', 'running', 'suspended', 'completed', 'failed', 'cancelled']);
export const InvocationSummary = named(
  'InvocationSummary',
  z.strictObject({
    id: Id,
    service: z.string(),
    handler: z.string(),
    key: z.string().nullable(),
    kind: z.string(),
    status: InvocationStatus,
    input: z.unknown(),
    result: z.unknown().optional(),
    error: CodedError.nullable(),
    idempotencyKey: z.string().nullable(),
    parentId: Id.nullable(),
    attempts: z.number().int(),
    leaseOwner: z.string().nullable(),
    createdAt: Timestamp,
    updatedAt: Timestamp,
    completedAt: Timestamp.nullable(),
  }),
);
export const JournalEntry = named(
  'JournalEntry',
  z.strictObject({
    seq: z.number().int(),
    kind: z.string(),
    name: z.string(),
    status: z.enum(['pending', 'done']),
    value: z.unknown().optional(),
    failure: CodedError.nullable(),
    wakeAt: Timestamp.nullable(),
    childId: Id.nullable(),
    createdAt: Timestamp,
    completedAt: Timestamp.nullable(),
  }),
);
export const InvocationDetail = named('InvocationDetail', InvocationSummary.extend({ journal: z.array(JournalEntry) }));
export const InvocationList = named('InvocationList', z.strictObject({ invocations: z.array(InvocationSummary) }));
export const InvocationCancelled = named('InvocationCancelled', z.strictObject({ id: Id, status: InvocationStatus }));

export const RegionView = named(
  'RegionView',
  z.strictObject({
    name: z.string(),
    status: z.enum(['online', 'offline', 'never_seen']),
    lastSeenAt: Timestamp.nullable(),
    agent: z.strictObject({ id: z.string().nullable(), version: z.string().nullable(), leader: z.boolean() }),
    lag: z.strictObject({ changes: z.number().int(), seconds: z.number() }),
    lastFullSyncAt: Timestamp.nullable(),
    objects: z.record(z.string(), z.number().int()),
    drift: z.strictObject({ repaired: z.number().int(), lastAt: Timestamp.nullable(), lastObject: z.string().nullable(), byKind: z.record(z.string(), z.number().int()) }),
    failures: z.array(z.strictObject({ resourceType: z.string(), resourceId: Id, code: z.string(), reason: z.string(), failedAt: Timestamp })),
  }),
);
export const RegionList = named('RegionList', z.array(RegionView));

const RolloutStateName = z.enum(ROLLOUT_STATES);
export const RolloutWave = named(
  'RolloutWave',
  z.strictObject({ index: z.number().int(), percentage: z.number().optional(), total: z.number().int(), succeeded: z.number().int(), failed: z.number().int(), skipped: z.number().int(), pending: z.number().int() }),
);
const Notes = z.record(z.string(), z.strictObject({ wave: z.number().int(), reason: z.string().optional() }));
/** The current rollout: `idle` alone before any rollout. */
export const RolloutView = named(
  'RolloutView',
  z.strictObject({
    state: RolloutStateName,
    rolloutId: Id.optional(),
    image: z.string().optional(),
    wavePercentages: z.array(z.number()).optional(),
    waveSizes: z.array(z.number().int()).optional(),
    currentWave: z.number().int().optional(),
    succeeded: z.number().int().optional(),
    failed: z.number().int().optional(),
    skippedOffline: z.number().int().optional(),
    skipped: z.number().int().optional(),
    reverted: z.number().int().optional(),
    /** Where the webhook points, not its secret path. */
    slackWebhookUrl: z.string().optional(),
    startedAt: Timestamp.optional(),
    updatedAt: Timestamp.optional(),
    waves: z.array(RolloutWave).optional(),
    succeededIds: z.array(Id).optional(),
    failedIds: z.array(Id).optional(),
    skippedIds: z.array(Id).optional(),
    notes: Notes.optional(),
    nextCursor: z.strictObject({ succeeded: Id.nullable(), failed: Id.nullable(), skipped: Id.nullable() }).optional(),
  }),
);
/** One outcome's page of sentinel ids (`?list=`). */
export const RolloutListPage = named('RolloutListPage', z.strictObject({ list: z.enum(['succeeded', 'failed', 'skipped']), ids: z.array(Id), notes: Notes, nextCursor: Id.nullable() }));
/** GET /v1/sentinel-rollouts/current: the rollout, or with ?list= one outcome's page. */
export const RolloutCurrent = named('RolloutCurrent', z.union([RolloutView, RolloutListPage]));
export const RolloutSentinels = named(
  'RolloutSentinels',
  z.strictObject({
    sentinels: z.array(z.strictObject({ id: Id, wave: z.number().int(), status: z.enum(['pending', 'READY', 'FAILED', 'SKIPPED']), reason: z.string().optional(), previousImage: z.string().nullable() })),
    nextCursor: Id.nullable(),
  }),
);
/** What start, resume, cancel and rollback answer: the rollout's state after the call, its waves' sizes. */
export const RolloutSummary = named(
  'RolloutSummary',
  z.strictObject({ state: RolloutStateName, rolloutId: Id.nullable(), waves: z.array(z.number().int()), reverted: z.number().int().optional() }),
);
export const InvocationQueued = named('InvocationQueued', z.strictObject({ invocationId: Id }));

export const VersionList = named(
  'VersionList',
  z.strictObject({
    environmentId: Id,
    versions: z.array(
      z.strictObject({
        version: z.string(),
        deploymentId: Id,
        image: z.string().nullable(),
        status: DeploymentStatus,
        createdAt: Timestamp,
        rollbackOf: Ref.nullable(),
        rolledBackBy: z.array(Ref.extend({ createdAt: Timestamp })),
      }),
    ),
  }),
);
export const VersionRollbackCreated = named(
  'VersionRollbackCreated',
  z.strictObject({ id: Id, status: DeploymentStatus, version: z.string(), rollbackOf: Id, rollbackOfVersion: z.string() }),
);
export const QuarantineList = named(
  'QuarantineList',
  z.strictObject({ environmentId: Id, images: z.array(z.strictObject({ image: z.string(), reason: z.string(), deploymentId: Id, createdAt: Timestamp })) }),
);
export const QuarantineReleased = named('QuarantineReleased', z.strictObject({ environmentId: Id, image: z.string(), released: z.literal(true) }));
export const Features = named(
  'Features',
  z.strictObject({ workspaceId: Id, features: z.strictObject({ multiRegion: z.boolean(), autoScaling: z.boolean(), blueGreen: z.boolean(), canary: z.boolean() }) }),
);

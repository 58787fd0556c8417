// Request bodies and queries of the public API, as zod schemas. Objects are strict: an unknown
// field (a typo like `replica`) is a 400 naming it, not a silently ignored setting.
import { z } from 'zod';
import { regionPattern } from '../../config';
import { DeploymentSpec, imageRef, text, VERSION_PATTERN } from '../../workflow/deploy/spec';

export { DEFAULT_CPU_MILLICORES, DEFAULT_MEMORY_MIB, DEFAULT_PORT, DEFAULT_REPLICAS } from '../../workflow/deploy/spec';

const region = z.string().regex(regionPattern, 'must be a DNS-safe region name like us-east-1');

/** POST /v1/deployments: the deployment spec itself (src/workflow/deploy/spec.ts), one source for its shape. */
export const CreateDeploymentBody = DeploymentSpec;
export type CreateDeploymentBody = DeploymentSpec;

export const ListDeploymentsQuery = z.strictObject({
  environmentId: text(128).min(1).default('default'),
  limit: z.coerce.number().int().min(1).max(500).default(100),
});

export const IdParams = z.strictObject({ id: text(128).min(1) });

export const SentinelDeployBody = z.strictObject({
  image: imageRef.optional(),
  replicas: z.number().int().min(0).max(100).optional(),
  cpuMillicores: z.number().int().min(0).max(256_000).optional(),
  memoryMib: z.number().int().min(0).max(1_048_576).optional(),
});

export const SentinelDeployQuery = z.strictObject({
  wait: z.enum(['true', 'false']).default('true'),
});

export const ListSentinelsQuery = z.strictObject({
  environmentId: text(128).min(1).optional(),
  region: region.optional(),
  after: text(128).optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(500),
});

export const ListInvocationsQuery = z.strictObject({
  status: z.enum(['scheduled', 'queued', 'ready', 'running', 'suspended', 'completed', 'failed', 'cancelled']).optional(),
  target: text(128).min(1).optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(100),
});

export const StartRolloutBody = z.strictObject({
  image: imageRef,
  wavePercentages: z
    .array(z.number())
    .min(1)
    .max(100)
    .optional()
    .superRefine((p, ctx) => {
      if (!p) return;
      p.forEach((v, i) => {
        if (!(v > 0 && v <= 100)) ctx.addIssue({ code: 'custom', path: [i], message: `${v} is not within (0, 100]` });
        else if (i > 0 && !(v > p[i - 1]!)) ctx.addIssue({ code: 'custom', path: [i], message: `${v} must be greater than the previous ${p[i - 1]}` });
      });
      if (p[p.length - 1] !== 100) ctx.addIssue({ code: 'custom', path: [p.length - 1], message: 'the last wave must be 100, or part of the fleet is never updated' });
    }),
  /** Checked against the outbound policy by the route (it needs the operator's allow-list). */
  slackWebhookUrl: z.url({ protocol: /^https?$/ }).max(2048).optional(),
});

/** A query parameter given once: fastify turns `?a=1&a=2` into an array, which is a 400 here. */
const single = (max: number) =>
  z
    .string({ error: (i) => (Array.isArray(i.input) ? 'must be given once' : 'must be a string') })
    .max(max)
    .optional();

export const EventsQuery = z.strictObject({
  deploymentId: single(128),
  type: single(64),
});

export const RolloutActionQuery = z.strictObject({ wait: z.enum(['true', 'false']).default('true') });
/** Keyset pages of the current rollout's sentinels; the cursor is the last sentinel id seen. */
const RolloutCursor = z.string().max(128).regex(/^[A-Za-z0-9_-]+$/, 'a sentinel id from nextCursor').optional();
const RolloutLimit = z.coerce.number().int().min(1).max(1000).default(1000);
export const RolloutCurrentQuery = z.strictObject({ list: z.enum(['succeeded', 'failed', 'skipped']).optional(), cursor: RolloutCursor, limit: RolloutLimit });
export const RolloutSentinelsQuery = z.strictObject({
  status: z.enum(['pending', 'READY', 'FAILED', 'SKIPPED']).optional(),
  wave: z.coerce.number().int().min(0).max(1000).optional(),
  cursor: RolloutCursor,
  limit: RolloutLimit,
});

/** POST /v1/deployments/:id/rollback: `force` deploys a quarantined image anyway. */
export const RollbackBody = z.strictObject({ force: z.boolean().optional() });

/** POST /v1/environments/:id/rollback: the target by version or by deployment id. */
export const EnvironmentRollbackBody = z
  .strictObject({ version: z.string().regex(VERSION_PATTERN, 'must be 1-64 characters of A-Z a-z 0-9 . _ + -').optional(), deploymentId: text(128).min(1).optional(), force: z.boolean().optional() })
  .refine((b) => !b.version !== !b.deploymentId, { path: ['version'], message: 'give exactly one of version or deploymentId' });

export const QuarantineParams = z.strictObject({ id: text(128).min(1), image: text(512).min(1) });

export const FeaturesBody = z
  .strictObject({ multiRegion: z.boolean().optional(), autoScaling: z.boolean().optional(), blueGreen: z.boolean().optional(), canary: z.boolean().optional() })
  .refine((b) => Object.keys(b).length > 0, { path: ['multiRegion'], message: 'give at least one of multiRegion, autoScaling, blueGreen, canary' });

export const VersionsQuery = z.strictObject({ limit: z.coerce.number().int().min(1).max(500).default(100) });

// Request bodies and queries of the public API, as zod schemas. Objects are strict: an unknown
// field (a typo like `replica`) is a 400 naming it, not a silently ignored setting.
import { z } from 'zod';
import { regionPattern } from '../../config';

const region = z.string().regex(regionPattern, 'must be a DNS-safe region name like us-east-1');
const imageRef = z
  .string()
  .min(1)
  .max(512)
  .regex(/^[a-z0-9][a-z0-9._\-/:@]*$/i, 'must be an image reference like nginx:1.27 or registry/app@sha256:…');
const envKey = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** Free text that reaches PostgreSQL: a NUL byte would make it fail (22021) with a 500. */
const text = (max: number) =>
  z
    .string()
    .max(max)
    .refine((s) => !s.includes('\u0000'), 'must not contain NUL bytes');

// Defaults from seed 001's deployment configuration; port 8080 is the common app default.
export const DEFAULT_REPLICAS = 2;
export const DEFAULT_CPU_MILLICORES = 500;
export const DEFAULT_MEMORY_MIB = 512;
export const DEFAULT_PORT = 8080;

export const CreateDeploymentBody = z
  .strictObject({
    image: imageRef.optional(),
    buildContext: text(4096).min(1).optional(),
    regions: z
      .array(region)
      .min(1, 'at least one region is required')
      .max(64)
      .refine((r) => new Set(r).size === r.length, 'regions must not repeat'),
    replicas: z.number().int().min(1).max(1000).default(DEFAULT_REPLICAS),
    cpuMillicores: z.number().int().min(10).max(256_000).default(DEFAULT_CPU_MILLICORES),
    memoryMib: z.number().int().min(16).max(1_048_576).default(DEFAULT_MEMORY_MIB),
    port: z.number().int().min(1).max(65535).default(DEFAULT_PORT),
    command: z.array(text(4096)).max(100).default([]),
    env: z
      .record(z.string().regex(envKey, 'environment variable names are letters, digits and _, not starting with a digit'), text(32_768))
      .refine((e) => Object.keys(e).length <= 200, 'at most 200 environment variables')
      .default({}),
    environmentId: text(128).min(1).default('default'),
  })
  .superRefine((b, ctx) => {
    if (!b.image === !b.buildContext) {
      ctx.addIssue({ code: 'custom', path: [b.image ? 'buildContext' : 'image'], message: 'give exactly one of image or buildContext' });
    }
  });
export type CreateDeploymentBody = z.infer<typeof CreateDeploymentBody>;

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
  slackWebhookUrl: z.url({ protocol: /^https?$/ }).optional(),
});

export const RolloutActionQuery = z.strictObject({ wait: z.enum(['true', 'false']).default('true') });

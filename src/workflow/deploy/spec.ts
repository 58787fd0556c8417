// The deployment spec: what a user asks to run, as one zod schema. The public API validates
// create bodies with it (src/http/api/schemas.ts re-exports it), createDeployment takes its
// output, and a rollback rebuilds one from a stored deployment (specOf), so a field added here
// is accepted, stored and copied in one place. Storage (src/store/deployments.ts), the wire's
// DeploymentApply and the CLI's types are separate shapes on purpose (rows, what krane needs,
// the JSON contract); each names its side.
import { z } from 'zod';
import { regionPattern } from '../../config';
import type { Deployment, NewDeployment } from '../../store/deployments';
import { ROLLING, Strategy, strategyOf } from '../progressive/strategy';
import { safeString } from '../../sync/wire/safe';

// Defaults from seed 001's deployment configuration; port 8080 is the common app default.
export const DEFAULT_REPLICAS = 2;
export const DEFAULT_CPU_MILLICORES = 500;
export const DEFAULT_MEMORY_MIB = 512;
export const DEFAULT_PORT = 8080;

/**
 * Cap on a deployment's env, keys and values together, in UTF-8 bytes. Every byte travels to
 * every region in each change and full sync, sits in the feed's buffer and in each pod spec
 * (etcd objects stop at 1.5 MiB; Linux caps one exec's whole environment at about 2 MiB).
 * Configuration fits in 64 KiB many times over; data does not belong in env.
 */
export const MAX_ENV_BYTES = 65_536;
/** Environment variables per deployment; beyond this it is data, not configuration. */
export const MAX_ENV_VARS = 200;

export const imageRef = z
  .string()
  .min(1)
  .max(512)
  .regex(/^[a-z0-9][a-z0-9._\-/:@]*$/i, 'must be an image reference like nginx:1.27 or registry/app@sha256:…');

/** Free text that reaches PostgreSQL: a NUL byte or a lone surrogate would make it fail with a
 *  500 (src/sync/wire/safe.ts); bodies are also checked whole, this covers queries and params. */
export const text = (max: number) => safeString().max(max);

const region = z.string().regex(regionPattern, 'must be a DNS-safe region name like us-east-1');
const envKey = /^[A-Za-z_][A-Za-z0-9_]*$/;

export const envBytes = (env: Record<string, string>) =>
  Object.entries(env).reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v), 0);

const env = z
  .record(z.string().regex(envKey, 'environment variable names are letters, digits and _, not starting with a digit'), text(32_768))
  .superRefine((e, ctx) => {
    if (Object.keys(e).length > MAX_ENV_VARS) ctx.addIssue({ code: 'custom', message: `at most ${MAX_ENV_VARS} environment variables` });
    const bytes = envBytes(e);
    if (bytes > MAX_ENV_BYTES) ctx.addIssue({ code: 'custom', message: `keys and values together are ${bytes} bytes; the limit is ${MAX_ENV_BYTES} bytes` });
  });

export const VERSION_PATTERN = /^[A-Za-z0-9._+-]{1,64}$/;

/** Target CPU utilisation of an autoscaled deployment when none is given (percent of requests). */
export const DEFAULT_CPU_UTILIZATION = 70;

export const Autoscaling = z
  .strictObject({
    minReplicas: z.number().int().min(1).max(1000),
    maxReplicas: z.number().int().min(1).max(1000),
    cpuUtilization: z.number().int().min(1).max(100).default(DEFAULT_CPU_UTILIZATION),
  })
  .refine((a) => a.minReplicas <= a.maxReplicas, { path: ['maxReplicas'], message: 'must not be below minReplicas' });

export const DeploymentSpec = z
  .strictObject({
    image: imageRef.optional(),
    /** A directory under ctrl's --build-root (relative paths are taken from it). */
    buildContext: text(4096).min(1).optional(),
    /** Absent: the environment's regions, else ctrl's --default-regions (createDeployment). */
    regions: z
      .array(region)
      .min(1, 'at least one region is required')
      .max(64)
      .refine((r) => new Set(r).size === r.length, 'regions must not repeat')
      .optional(),
    replicas: z.number().int().min(1).max(1000).default(DEFAULT_REPLICAS),
    cpuMillicores: z.number().int().min(10).max(256_000).default(DEFAULT_CPU_MILLICORES),
    memoryMib: z.number().int().min(16).max(1_048_576).default(DEFAULT_MEMORY_MIB),
    port: z.number().int().min(1).max(65535).default(DEFAULT_PORT),
    command: z.array(text(4096)).max(100).default([]),
    env: env.default({}),
    /**
     * Run the containers with a read-only root filesystem (a writable /tmp is mounted). Off by
     * default: most images write somewhere under / (caches, pid files), and a default that
     * crash-loops them teaches people to turn hardening off. Turn it on for images that allow it.
     */
    readOnlyRootFilesystem: z.boolean().default(false),
    environmentId: text(128).min(1).default('default'),
    /** How the deployment takes traffic (src/workflow/progressive/strategy.ts); rolling when absent. */
    strategy: Strategy.default(ROLLING),
    /** Unique within the environment; absent: the environment's next `v<N>`. */
    version: z.string().regex(VERSION_PATTERN, 'must be 1-64 characters of A-Z a-z 0-9 . _ + -').optional(),
    /** Replicas between min and max, following CPU, instead of a fixed `replicas`. */
    autoscaling: Autoscaling.optional(),
    /** Deploy an image even though it is quarantined in the environment. */
    force: z.boolean().optional(),
  })
  .superRefine((b, ctx) => {
    if (!b.image === !b.buildContext) {
      ctx.addIssue({ code: 'custom', path: [b.image ? 'buildContext' : 'image'], message: 'give exactly one of image or buildContext' });
    }
  });
export type DeploymentSpec = z.output<typeof DeploymentSpec>;

/**
 * The spec's fields that the deployments table stores as they are. The others are resolved
 * first by createDeployment: environmentId names the scope, buildContext becomes a real path
 * under --build-root, image may come from a build. A field added to the spec fails to compile
 * (Unplaced below) until it is in this list or resolved, and the list only holds fields that
 * spec and table both have, with the same types (storedFields).
 */
export const STORED_FIELDS = ['replicas', 'cpuMillicores', 'memoryMib', 'port', 'command', 'env', 'readOnlyRootFilesystem'] as const satisfies readonly (keyof DeploymentSpec & keyof NewDeployment)[];
type StoredField = (typeof STORED_FIELDS)[number];
type Unplaced = Exclude<keyof DeploymentSpec, StoredField | 'image' | 'buildContext' | 'environmentId' | 'strategy' | 'regions' | 'version' | 'autoscaling' | 'force'>;
const everyFieldPlaced: [Unplaced] extends [never] ? true : { unplaced: Unplaced } = true;
void everyFieldPlaced;

function pick<T extends Pick<DeploymentSpec, StoredField>>(from: T): Pick<DeploymentSpec, StoredField> {
  return Object.fromEntries(STORED_FIELDS.map((k) => [k, from[k]])) as Pick<DeploymentSpec, StoredField>;
}

/** The stored-as-is part of a new deployment's row, from its spec. */
export function storedFields(s: DeploymentSpec): Pick<NewDeployment, StoredField> {
  return pick(s);
}

/**
 * The spec a stored deployment was made from, with the image it ran (a rollback deploys it as
 * is). A rollback is rolling whatever the original was: it returns to a version already known.
 * It gets a version of its own (the next `v<N>`); its row names the source (rolled_back_from).
 */
export function specOf(d: Deployment & { image: string }): DeploymentSpec {
  return { image: d.image, environmentId: d.environmentId, regions: d.regions, ...pick(d), ...(d.autoscaling ? { autoscaling: d.autoscaling } : {}), strategy: ROLLING };
}

/** The strategy a stored deployment runs. */
export const strategyOfDeployment = (d: Pick<Deployment, 'strategy'>): Strategy => strategyOf(d.strategy);

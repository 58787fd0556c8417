// The wire protocol between ctrl and krane, as zod schemas both ends import: the change-feed
// stream (NDJSON lines), the desired states it carries, and krane's status reports. Parsing on
// both sides with the same schema is what makes "an unknown event is an error" enforceable.
import { z } from 'zod';
import { int32, saneDate } from './safe';

export const RESOURCE_TYPES = ['deployment_topology', 'sentinel', 'cilium_network_policy', 'environment_routes'] as const;
export type ResourceType = (typeof RESOURCE_TYPES)[number];

/** Namespace of customer workloads (StatefulSets and their headless Services). */
export const WORKLOAD_NAMESPACE = 'unkey';
/** Namespace of sentinels and the per-environment gossip resources (seed 000). */
export const SENTINEL_NAMESPACE = 'sentinel';

const id = z.string().min(1).max(128);
const region = z.string().regex(/^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$/, 'invalid region name');

export const ResourceRef = z.object({ type: z.enum(RESOURCE_TYPES), id, region });
export type ResourceRef = z.infer<typeof ResourceRef>;
export const refKey = (r: Pick<ResourceRef, 'type' | 'id'>) => `${r.type}/${r.id}`;

const scope = { workspaceId: id, projectId: id, appId: id, environmentId: id };

export const DeploymentApply = z.object({
  action: z.literal('apply'),
  kind: z.literal('deployment'),
  deploymentId: id,
  ...scope,
  region,
  namespace: z.string().min(1),
  image: z.string().min(1),
  replicas: int32().min(0),
  cpuMillicores: int32().positive(),
  memoryMib: int32().positive(),
  port: z.number().int().min(1).max(65535),
  command: z.array(z.string()),
  env: z.record(z.string(), z.string()),
  /** Containers get a read-only root filesystem; absent (from a ctrl before the field): false. */
  readOnlyRootFilesystem: z.boolean().optional(),
  /**
   * Replicas left to a HorizontalPodAutoscaler between these bounds at this CPU target (percent
   * of requests); krane then leaves the StatefulSet's replicas to it. Absent or null: `replicas`.
   */
  autoscaling: z
    .object({ minReplicas: int32().min(1), maxReplicas: int32().min(1), cpuUtilization: z.number().int().min(1).max(100) })
    .nullable()
    .optional(),
  /** The deployment's desired-state generation (a stop and a start each move it); krane stamps
   *  its pod reports with the one it applied. Absent from a ctrl before the field. A bigint
   *  column: bounded by what a JSON number holds exactly (zod's int). */
  generation: z.number().int().min(0).optional(),
});
export type DeploymentApply = z.infer<typeof DeploymentApply>;

export const SentinelApply = z.object({
  action: z.literal('apply'),
  kind: z.literal('sentinel'),
  sentinelId: id,
  ...scope,
  region,
  namespace: z.string().min(1),
  image: z.string().min(1),
  replicas: int32().min(0),
  cpuMillicores: int32().positive(),
  memoryMib: int32().positive(),
  /**
   * sentinelSpecHash of the fields above, computed by ctrl. krane stamps it on the Deployment
   * and reports it back once that spec is fully rolled out; ctrl calls a sentinel converged
   * only when the reported hash is the desired one, so READY never means "the old pods look
   * healthy".
   */
  specHash: z.string().min(1).max(128),
});
export type SentinelApply = z.infer<typeof SentinelApply>;

export const CiliumPolicyApply = z.object({
  action: z.literal('apply'),
  kind: z.literal('cilium_network_policy'),
  policyId: id,
  ...scope,
  region,
  namespace: z.string().min(1),
});
export type CiliumPolicyApply = z.infer<typeof CiliumPolicyApply>;

/**
 * An environment's routing table in one region (issue 13). krane writes it as the ConfigMap the
 * sentinels read, adding each backend's stable instance addresses (StatefulSet pod DNS names),
 * which follow from the deployment id and `ordinals`, its pods running in the region as krane
 * reported them (issue 33: so an autoscaler's extra pods get traffic); absent (a ctrl from
 * before), from `replicas`: ordinals 0 to replicas-1.
 */
export const RoutesApply = z.object({
  action: z.literal('apply'),
  kind: z.literal('environment_routes'),
  ...scope,
  region,
  namespace: z.string().min(1),
  hostname: z.string().min(1).max(253),
  backends: z
    .array(
      z.object({
        deploymentId: id,
        weight: z.number().int().min(0).max(100),
        replicas: int32().min(0),
        // A deployment runs at most 1,000 replicas (its spec's bound); ordinals are the pods'.
        ordinals: z.array(z.number().int().min(0).max(999_999)).max(1000).optional(),
      }),
    )
    .max(100),
});
export type RoutesApply = z.infer<typeof RoutesApply>;

export const DeleteState = z.object({ action: z.literal('delete') });
export type DeleteState = z.infer<typeof DeleteState>;

export const DesiredState = z.union([DeploymentApply, SentinelApply, CiliumPolicyApply, RoutesApply, DeleteState]);
export type DesiredState = z.infer<typeof DesiredState>;
export type ApplyState = DeploymentApply | SentinelApply | CiliumPolicyApply | RoutesApply;

const kindOf: Record<ResourceType, ApplyState['kind']> = {
  deployment_topology: 'deployment',
  sentinel: 'sentinel',
  cilium_network_policy: 'cilium_network_policy',
  environment_routes: 'environment_routes',
};

/**
 * W3C traceparent (`00-<trace>-<span>-<flags>`) of the write that caused a change, or of the
 * apply a report is about. Loosely checked: a malformed one only loses the trace link (the
 * reader parses it leniently), it must never fail an event.
 */
const traceparent = z.string().max(128).optional().catch(undefined);

export const ChangeEvent = z
  .object({ type: z.literal('change'), cursor: z.string().optional(), resource: ResourceRef, state: DesiredState, traceparent })
  .refine((e) => e.state.action === 'delete' || e.state.kind === kindOf[e.resource.type], {
    message: 'state kind does not match resource type',
    path: ['state', 'kind'],
  });
export type ChangeEvent = z.infer<typeof ChangeEvent>;

export const StreamLine = z.union([
  z.object({ type: z.literal('snapshot_begin') }),
  ChangeEvent,
  z.object({ type: z.literal('snapshot_end'), cursor: z.string().min(1), count: int32().min(0) }),
  z.object({ type: z.literal('heartbeat') }),
  z.object({ type: z.literal('end'), cursor: z.string().min(1) }),
  /**
   * Sent at the wait limit, instead of ending, to a poll that asked with `handover=1`: every
   * change up to `cursor` was sent. The agent opens its next poll from it and keeps reading
   * this one, which goes on sending changes until the agent closes it (once the next poll is
   * answered) or a grace period passes (then `end`). A change committed while the agent
   * reconnects so arrives at once instead of waiting for the reconnect. Sent only to agents
   * that asked: an older krane fails on a line type it does not know.
   */
  z.object({ type: z.literal('handover'), cursor: z.string().min(1) }),
]);
export type StreamLine = z.infer<typeof StreamLine>;

// ---- krane → ctrl status reports -------------------------------------------------------------

export const InstanceReport = z.object({
  deploymentId: id,
  podName: z.string().min(1).max(253),
  /** The pod's DNS name (podAddress: hostname.service.namespace.svc.domain), a DNS name's 253. */
  address: z.string().max(253).nullable(),
  status: z.enum(['pending', 'creating', 'running', 'failed']),
  reason: z.string().max(1024).nullable(),
  cpuMillicores: int32().min(0),
  memoryMib: int32().min(0),
  /** True when the pod is gone: ctrl removes the instance row. */
  deleted: z.boolean().default(false),
  /** The deployment's desired-state generation krane had applied when it observed the pod
   *  (DeploymentApply.generation); absent when it had applied none, or from an older krane.
   *  The instances column is an int4 (a larger value was a 500). */
  generation: int32().min(0).optional(),
});
export type InstanceReport = z.infer<typeof InstanceReport>;

/**
 * The outcome of krane's latest attempt at one resource's desired state. `failed`: the cluster
 * refused it for a reason retrying cannot fix (the code says which: ERR_KUBE_INVALID,
 * ERR_KUBE_FORBIDDEN, ERR_KUBE_TOO_LARGE, …); `succeeded`: a later apply or delete went through,
 * which clears an earlier failure. Both travel in one list, in the order they happened, and
 * the last entry per resource wins at both ends (the reporter's buffer and ctrl).
 */
export const ApplyReport = z.discriminatedUnion('outcome', [
  z.object({ resource: ResourceRef, outcome: z.literal('failed'), code: z.string().regex(/^ERR_[A-Z_]+$/).max(64), reason: z.string().min(1).max(2048), traceparent }),
  z.object({
    resource: ResourceRef,
    outcome: z.literal('succeeded'),
    /** The apply span (krane's deployment.apply.<region>) this outcome ended, for ctrl to link to. */
    traceparent,
    /** Set when krane had to delete and create an object again (a change to an immutable field): why. */
    recreated: z.string().max(2048).optional(),
  }),
]);
export type ApplyReport = z.infer<typeof ApplyReport>;

/** One pod of a deployment, by name: an entry of the complete set below. */
export const InstanceRef = z.object({ deploymentId: id, podName: z.string().min(1).max(253) });
export type InstanceRef = z.infer<typeof InstanceRef>;

/**
 * Most pods one complete set may name: ~60 bytes each keeps a set of this size well under
 * ctrl's 4 MiB body limit. A region with more pods sends no set (its rows heal per report only).
 */
export const MAX_INSTANCE_SET = 50_000;

/** An autoscaled deployment's HorizontalPodAutoscaler as krane sees it (issue 25). */
export const AutoscalerStatus = z.object({
  deploymentId: id,
  // Each lands in an int4 column of topology_autoscalers.
  minReplicas: int32().min(0),
  maxReplicas: int32().min(0),
  /** null until the autoscaler has run once. */
  currentReplicas: int32().min(0).nullable(),
  desiredReplicas: int32().min(0).nullable(),
  /** Average CPU of the Ready pods, percent of requests; null without metrics. */
  cpuUtilization: int32().min(0).nullable(),
  /** True when the autoscaler is gone: ctrl removes its row. */
  deleted: z.boolean().default(false),
});
export type AutoscalerStatus = z.infer<typeof AutoscalerStatus>;

export const DeploymentStatusReport = z.object({
  region,
  instances: z.array(InstanceReport).max(10_000).default([]),
  applies: z.array(ApplyReport).max(1000).default([]),
  /**
   * The complete set of the region's deployment pods, as krane listed them after a full list
   * (issue 23): ctrl removes the region's instance rows of every other pod, except those this
   * body reports on (they are newer than the list). Absent (an older krane, or no list since
   * the last report): nothing is removed. An older ctrl ignores the field.
   */
  instanceSet: z.array(InstanceRef).max(MAX_INSTANCE_SET).optional(),
  autoscalers: z.array(AutoscalerStatus).max(10_000).default([]),
});
export type DeploymentStatusReport = z.infer<typeof DeploymentStatusReport>;

export const SentinelStatus = z.object({
  sentinelId: id,
  availableReplicas: int32().min(0),
  updatedReplicas: int32().min(0),
  readyReplicas: int32().min(0),
  observedGeneration: z.number().int().min(0),
  /** The image the Deployment runs: an image reference, bounded like the API's (512). */
  runningImage: z.string().max(512).nullable(),
  health: z.enum(['unknown', 'healthy', 'unhealthy']),
  /**
   * The spec hash stamped on the Deployment, reported only once the Deployment controller has
   * observed that spec and the rollout to it is complete; null otherwise (or when it is gone).
   */
  specHash: z.string().max(128).nullable().default(null),
  /**
   * The order of reports, which every krane replica of the region agrees on (issue 33): the
   * Lease's leaseTransitions when the reporting krane took the lead, and that leader's own
   * counter, strictly increasing. ctrl keeps the greatest { leaseEpoch, seq }: a report that
   * reaches it after a later one (a request held on a slow link, retried after a lost answer, or
   * from a leader that lost its Lease) cannot overwrite it. Both or neither; absent from an older
   * krane or one without leader election (applied as they come); an older ctrl ignores them.
   */
  leaseEpoch: int32().min(0).optional(),
  seq: z.number().int().min(0).max(Number.MAX_SAFE_INTEGER).optional(),
  /**
   * When krane observed this (its wall clock, ms since the epoch): shown, never used to order
   * (clocks of different processes disagree). ctrl keeps it only within now ± 60 s.
   */
  observedAt: z.number().positive().finite().optional(),
}).superRefine((s, ctx) => {
  // Half an order cannot be compared: name the missing half.
  if ((s.leaseEpoch === undefined) !== (s.seq === undefined)) {
    ctx.addIssue({ code: 'custom', path: [s.leaseEpoch === undefined ? 'leaseEpoch' : 'seq'], message: 'leaseEpoch and seq come together' });
  }
});
export type SentinelStatus = z.infer<typeof SentinelStatus>;

export const SentinelStatusReport = z.object({
  region,
  sentinels: z.array(SentinelStatus).max(10_000).default([]),
  applies: z.array(ApplyReport).max(1000).default([]),
});
export type SentinelStatusReport = z.infer<typeof SentinelStatusReport>;

/**
 * The GC brake's state after krane's latest GC pass: `held` when the pass would have deleted
 * more than `maxFraction` of the `managed` objects (and more than a handful) and was refused
 * until an operator confirms on krane's host (`unkey-infra krane gc --confirm`).
 */
export const GcStatus = z.object({
  held: z.boolean(),
  wouldDelete: int32().min(0),
  managed: int32().min(0),
  maxFraction: z.number().gt(0).max(1),
  at: saneDate(),
});
export type GcStatus = z.infer<typeof GcStatus>;

/** Region-wide facts krane reports (POST /v1/cluster/region/status). */
export const RegionStatusReport = z.object({ region, gc: GcStatus });
export type RegionStatusReport = z.infer<typeof RegionStatusReport>;

// ---- single-resource desired-state lookups (GET /v1/cluster/*/:id/desired) ---------------

/** 200 body of a desired-state lookup; a 404 instead means the resource should be deleted. */
export const DesiredResponse = z.object({ resource: ResourceRef, state: z.union([DeploymentApply, SentinelApply, CiliumPolicyApply, RoutesApply]) });
export type DesiredResponse = z.infer<typeof DesiredResponse>;

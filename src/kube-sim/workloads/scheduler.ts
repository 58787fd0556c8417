// Placement of pods on the simulated nodes, as pure functions: resource quantities, what a pod
// requests, which node has room for it, and the scheduler's message when none has, in the words
// of kube-scheduler's FitError (pkg/scheduler/framework/types.go): "0/N nodes are available:"
// then each reason with the number of nodes that gave it, sorted as strings, then the
// preemption plugin's own FitError; each part ends with ".", so the whole ends with "..".
// Stateful accounting (which pod holds what on which node) is capacity.ts.

/** The shape of the simulated nodes: how many, and each one's allocatable CPU and memory. */
export interface NodeShape {
  count: number;
  cpuMilli: number;
  memoryBytes: number;
}

/** Three nodes (hostIP 10.0.0.x, kube-sim-node-N), like a small cluster's zones, each a common
 *  8-core, 32 GiB worker. */
export const DEFAULT_NODE_SHAPE: NodeShape = { count: 3, cpuMilli: 8000, memoryBytes: 32 * 1024 ** 3 };
/** The default's node count, for placement round-robin. */
export const NODES = DEFAULT_NODE_SHAPE.count;

const SUFFIX: Record<string, number> = {
  Ki: 1024, Mi: 1024 ** 2, Gi: 1024 ** 3, Ti: 1024 ** 4, Pi: 1024 ** 5, Ei: 1024 ** 6,
  n: 1e-9, u: 1e-6, m: 1e-3, k: 1e3, K: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, E: 1e18,
};

/** A Kubernetes quantity ("500m", "2", "128Mi", "1e3") as a number of base units. */
export function parseQuantity(q: unknown): number {
  if (typeof q === 'number') return q;
  if (typeof q !== 'string') return 0;
  const m = /^([+-]?[0-9.]+(?:[eE][+-]?\d+)?)([a-zA-Z]*)$/.exec(q.trim());
  if (!m) return 0;
  const unit = m[2] ? SUFFIX[m[2]] : 1;
  return unit === undefined ? 0 : Number(m[1]) * unit;
}

interface Resources {
  requests?: Record<string, unknown>;
  limits?: Record<string, unknown>;
}

/** What the scheduler reserves for a pod: the sum of its containers' requests (limits when a
 *  request is missing, as the API server defaults requests from limits). */
export function podRequests(spec: { containers?: { resources?: Resources }[] } | undefined): { cpuMilli: number; memoryBytes: number } {
  let cpuMilli = 0;
  let memoryBytes = 0;
  for (const c of spec?.containers ?? []) {
    const r = c.resources ?? {};
    cpuMilli += parseQuantity(r.requests?.cpu ?? r.limits?.cpu) * 1000;
    memoryBytes += parseQuantity(r.requests?.memory ?? r.limits?.memory);
  }
  return { cpuMilli, memoryBytes };
}

/** What a node has left for new pods. */
export interface NodeRoom {
  cpuMilli: number;
  memoryBytes: number;
}

/** kube-scheduler's NodeResourcesFit reasons for one node (none: the pod fits). A zero request
 *  always fits, as in the plugin. */
export function insufficient(need: NodeRoom, room: NodeRoom): string[] {
  const out: string[] = [];
  if (need.cpuMilli > 0 && need.cpuMilli > room.cpuMilli) out.push('Insufficient cpu');
  if (need.memoryBytes > 0 && need.memoryBytes > room.memoryBytes) out.push('Insufficient memory');
  return out;
}

/** FitError's histogram: "<count> <reason>" per reason, sorted as strings, joined by ", ". */
function histogram(reasonsPerNode: readonly string[][]): string {
  const counts = new Map<string, number>();
  for (const reasons of reasonsPerNode) for (const r of reasons) counts.set(r, (counts.get(r) ?? 0) + 1);
  return [...counts].map(([r, n]) => `${n} ${r}`).sort().join(', ');
}

/**
 * The FailedScheduling message for a pod no node has room for, given each node's reasons.
 * Every pod here has the same priority, so the preemption plugin finds no victims on any node.
 */
export function fitErrorMessage(reasonsPerNode: readonly string[][]): string {
  const n = reasonsPerNode.length;
  const preemption = `preemption: 0/${n} nodes are available: ${histogram(reasonsPerNode.map(() => ['No preemption victims found for incoming pod']))}.`;
  return `0/${n} nodes are available: ${histogram(reasonsPerNode)}. ${preemption}.`;
}

/** Undefined when the pod fits an empty node of the shape; otherwise the scheduler's message. */
export function unschedulableReason(spec: Parameters<typeof podRequests>[0], shape: NodeShape = DEFAULT_NODE_SHAPE): string | undefined {
  const reasons = insufficient(podRequests(spec), shape);
  if (reasons.length === 0) return undefined;
  return fitErrorMessage(Array.from({ length: shape.count }, () => reasons));
}

// Placement of pods on the simulated nodes, as pure functions: resource quantities, whether a
// pod's requests fit an empty node at all, and the scheduler's message when they do not.
// There is no bin-packing: a pod that fits one node is placed, round-robin.

/** Simulated nodes (hostIP 10.0.0.x, kube-sim-node-N): three, like a small cluster's zones. */
export const NODES = 3;
/** Allocatable resources of each simulated node: a common 8-core, 32 GiB worker. */
export const NODE_CAPACITY = { cpuMilli: 8000, memoryBytes: 32 * 1024 ** 3 };

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

/** Undefined when the pod fits a node; otherwise the scheduler's FailedScheduling message. */
export function unschedulableReason(spec: Parameters<typeof podRequests>[0]): string | undefined {
  const need = podRequests(spec);
  const missing: string[] = [];
  if (need.cpuMilli > NODE_CAPACITY.cpuMilli) missing.push(`${NODES} Insufficient cpu`);
  if (need.memoryBytes > NODE_CAPACITY.memoryBytes) missing.push(`${NODES} Insufficient memory`);
  if (missing.length === 0) return undefined;
  return `0/${NODES} nodes are available: ${missing.join(', ')}. preemption: 0/${NODES} nodes are available: ${NODES} No preemption victims found for incoming pod.`;
}

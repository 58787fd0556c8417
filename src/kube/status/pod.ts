// Pod → instance state, a pure function. `failed` means the instance cannot serve and will not
// recover by waiting (crash loop, image cannot be pulled, out of memory, bad config, and seed
// 001's "resource limits": no node has room for what the pod requests); `creating`
// (seed 001) is a pod placed on a node whose container is not running yet (pulling, creating);
// `pending` covers the rest still on its way (not scheduled yet, terminating, a running
// container not Ready yet); `running` means the pod is Ready. The reason is the kubelet's own
// word for it.
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import type { InstanceReport } from '../../sync/wire';
import { deploymentObjectName, LABEL } from '../manifests';
import { toMib, toMillicores } from './quantity';

/** Waiting reasons that mean the container will not start without a change from outside. */
export const FAILURE_REASONS = new Set([
  'CrashLoopBackOff',
  'ImagePullBackOff',
  'ErrImagePull',
  'ErrImageNeverPull',
  'InvalidImageName',
  'CreateContainerConfigError',
  'CreateContainerError',
  'RunContainerError',
  'OOMKilled',
]);

/**
 * The scheduler's words for a node without room for a pod's requests (NodeResourcesFit). A pod
 * unschedulable for that fails (seed 001: "Creating → Failed: resource limits"); one waiting for
 * a taint, an affinity or a volume stays pending, since a node that fits may still come.
 */
const INSUFFICIENT_RESOURCES = /\d+ Insufficient (cpu|memory)\b/;

/** Longest reason kept (the wire's limit is 1024): a scheduler message over many nodes is long. */
const MAX_REASON = 1000;

export interface PodState {
  status: InstanceReport['status'];
  reason: string | null;
}

function containerFailure(cs: V1ContainerStatus): string | undefined {
  const waiting = cs.state?.waiting?.reason;
  const lastTerminated = cs.lastState?.terminated?.reason;
  const terminated = cs.state?.terminated;
  // A crash loop caused by the memory limit says so: OOMKilled is the actionable reason.
  if (waiting === 'CrashLoopBackOff' && lastTerminated === 'OOMKilled') return 'OOMKilled';
  if (waiting && FAILURE_REASONS.has(waiting)) return waiting;
  if (terminated?.reason === 'OOMKilled') return 'OOMKilled';
  if (terminated && terminated.exitCode !== 0) return terminated.reason ?? 'Error';
  return undefined;
}

export function podState(pod: V1Pod): PodState {
  // A pod on its way out is neither serving nor failing: its container exits on the SIGTERM of
  // the deletion (143), and that said `failed` to ctrl, which took a stop's own work for the
  // canary's failed signal.
  if (pod.metadata?.deletionTimestamp) return { status: 'pending', reason: 'Terminating' };
  const st = pod.status ?? {};
  const statuses = [...(st.initContainerStatuses ?? []), ...(st.containerStatuses ?? [])];
  for (const cs of statuses) {
    const r = containerFailure(cs);
    if (r) return { status: 'failed', reason: r };
  }
  if (st.phase === 'Failed') return { status: 'failed', reason: st.reason ?? 'Failed' };
  // restartPolicy Always: a server that exited cleanly is still not serving.
  if (st.phase === 'Succeeded') return { status: 'failed', reason: 'Completed' };
  const ready = st.conditions?.find((c) => c.type === 'Ready')?.status === 'True';
  if (st.phase === 'Running' && ready) return { status: 'running', reason: null };
  const scheduled = Boolean(pod.spec?.nodeName) || st.conditions?.some((c) => c.type === 'PodScheduled' && c.status === 'True') === true;
  const creating = scheduled && !statuses.some((cs) => cs.state?.running);
  const waiting = statuses.find((cs) => cs.state?.waiting?.reason)?.state?.waiting?.reason;
  if (waiting) return { status: creating ? 'creating' : 'pending', reason: waiting };
  if (creating) return { status: 'creating', reason: st.phase ?? 'Pending' };
  const unscheduled = st.conditions?.find((c) => c.type === 'PodScheduled' && c.status === 'False');
  if (unscheduled && unscheduled.reason === 'Unschedulable' && INSUFFICIENT_RESOURCES.test(unscheduled.message ?? '')) {
    return { status: 'failed', reason: `resource limits: ${unscheduled.message}`.slice(0, MAX_REASON) };
  }
  if (unscheduled) return { status: 'pending', reason: unscheduled.reason ?? 'Unschedulable' };
  return { status: 'pending', reason: st.phase === 'Running' ? 'NotReady' : (st.phase ?? 'Pending') };
}

/**
 * The stable address of a StatefulSet pod: its DNS name under the headless Service
 * (`<pod>.<service>.<namespace>.svc.cluster.local`). It survives restarts and rescheduling,
 * unlike the pod IP, which is why instances are StatefulSet pods at all (seed 003).
 */
export function podAddress(pod: V1Pod, clusterDomain = 'cluster.local'): string | null {
  const name = pod.spec?.hostname ?? pod.metadata?.name;
  const depId = pod.metadata?.labels?.[LABEL.deploymentId];
  const service = pod.spec?.subdomain ?? (depId ? deploymentObjectName(depId) : undefined);
  if (!name || !service) return null;
  return `${name}.${service}.${pod.metadata?.namespace}.svc.${clusterDomain}`;
}

/** The report for one deployment pod, or undefined for a pod without a deployment id label. */
export function instanceReport(pod: V1Pod, deleted = false): InstanceReport | undefined {
  const deploymentId = pod.metadata?.labels?.[LABEL.deploymentId];
  const podName = pod.metadata?.name;
  if (!deploymentId || !podName) return undefined;
  const containers = pod.spec?.containers ?? [];
  let cpu = 0;
  let mem = 0;
  for (const c of containers) {
    cpu += toMillicores(c.resources?.limits?.cpu ?? c.resources?.requests?.cpu);
    mem += toMib(c.resources?.limits?.memory ?? c.resources?.requests?.memory);
  }
  const s = podState(pod);
  return { deploymentId, podName, address: podAddress(pod), status: s.status, reason: s.reason, cpuMillicores: cpu, memoryMib: mem, deleted };
}

/** A Kubernetes timestamp as the client hands it over (Date, or RFC 3339 text) in ms; NaN if absent. */
function millis(t: Date | string | undefined): number {
  return t === undefined ? NaN : new Date(t).getTime();
}

/**
 * An instance's startup time (deployment_instance_startup_time_seconds): from the pod's creation
 * to its Ready transition, with the time it became ready, or null while it is not running.
 */
export function podStartup(pod: V1Pod): { seconds: number; readyAt: number } | null {
  if (podState(pod).status !== 'running') return null;
  const created = millis(pod.metadata?.creationTimestamp as Date | string | undefined);
  const readyAt = millis(pod.status?.conditions?.find((c) => c.type === 'Ready')?.lastTransitionTime as Date | string | undefined);
  if (!Number.isFinite(created) || !Number.isFinite(readyAt)) return null;
  return { seconds: Math.max(0, (readyAt - created) / 1000), readyAt };
}

// Pure builders of pod statuses for each stage of the simulated pod lifecycle, and the
// fault a container gets from its image. Kept apart from the controller so the shapes (what
// status watchers read: phase, conditions, containerStatuses with waiting/terminated reasons
// and restart counts) can be read in one place.

export type Fault = 'crash' | 'pullfail' | 'slow' | 'oom';
export const FAULTS: readonly Fault[] = ['crash', 'pullfail', 'slow', 'oom'];

/** Fault chosen by an image name: the first marker found in it. */
export function faultFromImage(image: string | undefined): Fault | undefined {
  if (!image) return undefined;
  const lower = image.toLowerCase();
  if (lower.includes('pullfail')) return 'pullfail';
  if (lower.includes('crash')) return 'crash';
  if (lower.includes('oom')) return 'oom';
  if (lower.includes('slow')) return 'slow';
  return undefined;
}

export interface ContainerSpec {
  name: string;
  image?: string;
}

/** What one container is doing at a point of the lifecycle. */
export type ContainerStage =
  | { kind: 'creating' }
  | { kind: 'running'; startedAt: string }
  | { kind: 'pullError'; reason: 'ErrImagePull' | 'ImagePullBackOff' }
  | { kind: 'crashed'; restartCount: number; lastReason: 'Error' | 'OOMKilled'; lastExitCode: number; lastStartedAt: string; lastFinishedAt: string }
  | { kind: 'oomKilled'; startedAt: string; finishedAt: string };

const imageId = (image: string | undefined) => (image ? `docker-pullable://${image.split(':')[0]}@sha256:${'0'.repeat(64)}` : '');

export function containerStatus(c: ContainerSpec, stage: ContainerStage, restartCount: number): Record<string, unknown> {
  const base = { name: c.name, image: c.image ?? '', imageID: '', restartCount };
  switch (stage.kind) {
    case 'creating':
      return { ...base, ready: false, started: false, state: { waiting: { reason: 'ContainerCreating' } }, lastState: {} };
    case 'running':
      return { ...base, imageID: imageId(c.image), containerID: `containerd://${c.name}`, ready: true, started: true, state: { running: { startedAt: stage.startedAt } }, lastState: {} };
    case 'pullError':
      return {
        ...base,
        ready: false,
        started: false,
        state: {
          waiting: {
            reason: stage.reason,
            message:
              stage.reason === 'ErrImagePull'
                ? `failed to pull and unpack image "${c.image}": not found`
                : `Back-off pulling image "${c.image}"`,
          },
        },
        lastState: {},
      };
    case 'oomKilled':
      return {
        ...base,
        imageID: imageId(c.image),
        containerID: `containerd://${c.name}`,
        ready: false,
        started: false,
        state: { terminated: { exitCode: 137, reason: 'OOMKilled', startedAt: stage.startedAt, finishedAt: stage.finishedAt, containerID: `containerd://${c.name}` } },
        lastState: {},
      };
    case 'crashed':
      return {
        ...base,
        imageID: imageId(c.image),
        containerID: `containerd://${c.name}`,
        ready: false,
        started: false,
        state: { waiting: { reason: 'CrashLoopBackOff', message: `back-off restarting failed container ${c.name}` } },
        lastState: {
          terminated: { exitCode: stage.lastExitCode, reason: stage.lastReason, startedAt: stage.lastStartedAt, finishedAt: stage.lastFinishedAt, containerID: `containerd://${c.name}` },
        },
      };
  }
}

export interface PodPlacement {
  hostIP: string;
  podIP: string;
  startTime: string;
}

function condition(type: string, status: boolean, time: string, reason?: string) {
  return { type, status: status ? 'True' : 'False', lastProbeTime: null, lastTransitionTime: time, ...(reason && !status ? { reason } : {}) };
}

/**
 * The pod status for the given container statuses. `since` keeps condition transition times
 * stable across writes that do not flip them (so an unchanged pod does not churn).
 */
export function podStatus(
  placement: PodPlacement,
  containers: Record<string, unknown>[],
  previous: { conditions?: { type: string; status: string; lastTransitionTime?: string }[] } | undefined,
  now: string,
): Record<string, unknown> {
  const allReady = containers.length > 0 && containers.every((c) => c.ready === true);
  const anyStarted = containers.some((c) => (c.state as Record<string, unknown>).running !== undefined || (c.lastState as Record<string, unknown>).terminated !== undefined || (c.state as Record<string, unknown>).terminated !== undefined);
  const pullBlocked = containers.some((c) => {
    const w = (c.state as { waiting?: { reason?: string } }).waiting;
    return w?.reason === 'ErrImagePull' || w?.reason === 'ImagePullBackOff' || w?.reason === 'ContainerCreating';
  });
  const phase = anyStarted && !pullBlocked ? 'Running' : 'Pending';
  const keep = (type: string, status: boolean) => {
    const prev = previous?.conditions?.find((c) => c.type === type);
    return prev && prev.status === (status ? 'True' : 'False') && prev.lastTransitionTime ? prev.lastTransitionTime : now;
  };
  return {
    phase,
    conditions: [
      condition('PodReadyToStartContainers', true, keep('PodReadyToStartContainers', true)),
      condition('Initialized', true, keep('Initialized', true)),
      condition('Ready', allReady, keep('Ready', allReady), 'ContainersNotReady'),
      condition('ContainersReady', allReady, keep('ContainersReady', allReady), 'ContainersNotReady'),
      condition('PodScheduled', true, keep('PodScheduled', true)),
    ],
    hostIP: placement.hostIP,
    hostIPs: [{ ip: placement.hostIP }],
    podIP: placement.podIP,
    podIPs: [{ ip: placement.podIP }],
    startTime: placement.startTime,
    containerStatuses: containers,
    qosClass: 'BestEffort',
  };
}

export function isPodReady(pod: { status?: { conditions?: { type: string; status: string }[] } }): boolean {
  return pod.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
}

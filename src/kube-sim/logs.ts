// Synthetic container logs for the pods/log subresource, as pure functions of the pod's status,
// the container's fault and the time: a running container starts up and then logs a health
// check every interval; a crashing one logs why it exits; an OOM-killed one says it was
// killed. Errors are the kubelet's 400s (waiting container, no previous instance, unknown or
// unnamed container).
import { badRequest } from './status';
import type { KubeObject } from './types';
import type { Fault } from './workloads/pod-status';

export interface LogLine {
  /** When the line was written (ms since epoch). */
  at: number;
  text: string;
}

export interface LogQuery {
  container?: string;
  previous: boolean;
  tailLines?: number;
  sinceSeconds?: number;
  timestamps: boolean;
  limitBytes?: number;
}

/** Lines kept per container instance, like a kubelet's rotated log keeps a bounded tail. */
const MAX_LINES = 1000;

interface ContainerState {
  running?: { startedAt?: string };
  waiting?: { reason?: string };
  terminated?: { startedAt?: string; finishedAt?: string; exitCode?: number; reason?: string };
}

interface ContainerStatusView {
  name: string;
  state?: ContainerState;
  lastState?: ContainerState;
}

/** The container a request means: the named one, or the only one. */
export function pickContainer(pod: KubeObject, name: string | undefined): { name: string; image?: string; memoryLimit?: string } {
  const cs: { name: string; image?: string; resources?: { limits?: { memory?: string } } }[] = pod.spec?.containers ?? [];
  const podName = pod.metadata.name;
  if (!name) {
    if (cs.length !== 1) throw badRequest(`a container name must be specified for pod ${podName}, choose one of: [${cs.map((c) => c.name).join(' ')}]`);
    name = cs[0]!.name;
  }
  const c = cs.find((x) => x.name === name);
  if (!c) throw badRequest(`container ${name} is not valid for pod ${podName}`);
  return { name: c.name, image: c.image, memoryLimit: c.resources?.limits?.memory };
}

function instanceLines(c: { name: string; image?: string; memoryLimit?: string }, run: { startedAt: number; finishedAt?: number; exitCode?: number; reason?: string }, fault: Fault | undefined, intervalMs: number, now: number): LogLine[] {
  const lines: LogLine[] = [{ at: run.startedAt, text: `starting ${c.image ?? c.name} (container ${c.name})` }];
  const end = run.finishedAt;
  if (end !== undefined && run.reason === 'OOMKilled') {
    lines.push({ at: run.startedAt, text: 'allocating working set' });
    lines.push({ at: end, text: `fatal: out of memory: the container was OOMKilled (exit code ${run.exitCode ?? 137}): it exceeded its memory limit${c.memoryLimit ? ` of ${c.memoryLimit}` : ''} and was killed by the kernel` });
    return lines;
  }
  if (end !== undefined) {
    lines.push({ at: run.startedAt, text: 'loading configuration' });
    const why = fault === 'crash' ? `the image ${c.image ?? ''} is built to crash (kube-sim fault "crash")` : 'the process exited';
    lines.push({ at: end, text: `fatal: exiting with code ${run.exitCode ?? 1}: ${why}` });
    return lines;
  }
  lines.push({ at: run.startedAt, text: 'listening on :8080' });
  const beats = Math.max(0, Math.floor((now - run.startedAt) / intervalMs));
  for (let i = Math.max(1, beats - MAX_LINES + 1); i <= beats; i++) lines.push({ at: run.startedAt + i * intervalMs, text: 'GET /healthz 200' });
  return lines;
}

const ms = (ts: string | undefined, fallback: number) => (ts ? Date.parse(ts) : fallback);

/** The log of the requested container instance, before tail/since/limit filtering. */
export function containerLog(pod: KubeObject, query: LogQuery, fault: Fault | undefined, intervalMs: number, now: number): { lines: LogLine[]; running: boolean; container: string } {
  const c = pickContainer(pod, query.container);
  const podName = pod.metadata.name;
  const status = ((pod.status?.containerStatuses ?? []) as ContainerStatusView[]).find((s) => s.name === c.name);
  if (!status) {
    if (!pod.spec?.nodeName && !pod.status?.hostIP) throw badRequest(`pod ${podName} does not have a host assigned`);
    throw badRequest(`container "${c.name}" in pod "${podName}" is waiting to start: ContainerCreating`);
  }
  const last = status.lastState?.terminated;
  if (query.previous) {
    if (!last) throw badRequest(`previous terminated container "${c.name}" in pod "${podName}" not found`);
    return { lines: instanceLines(c, { startedAt: ms(last.startedAt, now), finishedAt: ms(last.finishedAt, now), exitCode: last.exitCode, reason: last.reason }, fault, intervalMs, now), running: false, container: c.name };
  }
  const st = status.state ?? {};
  if (st.running) return { lines: instanceLines(c, { startedAt: ms(st.running.startedAt, now) }, fault, intervalMs, now), running: true, container: c.name };
  const t = st.terminated ?? (st.waiting?.reason === 'CrashLoopBackOff' ? last : undefined);
  if (t) return { lines: instanceLines(c, { startedAt: ms(t.startedAt, now), finishedAt: ms(t.finishedAt, now), exitCode: t.exitCode, reason: t.reason }, fault, intervalMs, now), running: false, container: c.name };
  const reason = st.waiting?.reason ?? 'ContainerCreating';
  const why = reason === 'ErrImagePull' || reason === 'ImagePullBackOff' ? 'trying and failing to pull image' : reason;
  throw badRequest(`container "${c.name}" in pod "${podName}" is waiting to start: ${why}`);
}

/** Applies sinceSeconds, tailLines and timestamps, and renders the text. */
export function renderLog(lines: LogLine[], query: LogQuery, now: number): string {
  let out = lines;
  if (query.sinceSeconds !== undefined) out = out.filter((l) => l.at >= now - query.sinceSeconds! * 1000);
  if (query.tailLines !== undefined && query.tailLines >= 0) out = query.tailLines === 0 ? [] : out.slice(-query.tailLines);
  const text = out.map((l) => formatLine(l, query.timestamps)).join('');
  return query.limitBytes !== undefined && query.limitBytes > 0 ? Buffer.from(text).subarray(0, query.limitBytes).toString('utf8') : text;
}

export const formatLine = (l: LogLine, timestamps: boolean): string => `${timestamps ? new Date(l.at).toISOString().replace('Z', '000000Z') + ' ' : ''}${l.text}\n`;

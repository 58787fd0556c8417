// What an image serves, and what the kubelet's probes make of it. A probe passes only when it
// asks for something the image's contract says it serves, so a wrong path or port is caught
// here as it would be on a cluster: the container never becomes Ready (readiness), or is
// killed and restarted after failureThreshold misses (liveness), with the kubelet's Unhealthy
// messages.
//
// Contracts: the sentinel image (ghcr.io/unkeyed/sentinel, or a mirror of it such as
// `registry.example/sentinel` or plain `sentinel`) serves `/_unkey/internal/health` and, in newer images, `/health/live` and
// `/health/ready`, all on 8040 (seed 000's probe table); any other image answers `/` on each
// TCP port it declares and 404 elsewhere. exec probes pass (there is nothing to run).
import type { KubeObject } from '../types';

interface Served {
  port: number;
  /** HTTP paths answered 200 (others 404). */
  paths: readonly string[];
}

const SENTINEL_PORT = 8040;
const SENTINEL_PATHS = ['/_unkey/internal/health', '/health/live', '/health/ready'];

/** The repository part of an image reference (no tag, no digest). */
export function repositoryOf(image: string): string {
  const noDigest = image.split('@')[0]!;
  const slash = noDigest.lastIndexOf('/');
  const colon = noDigest.lastIndexOf(':');
  return colon > slash ? noDigest.slice(0, colon) : noDigest;
}

/** ghcr.io/unkeyed/sentinel, or a mirror of it (any registry path ending in `sentinel…`). */
const isSentinel = (image: string) => {
  const repo = repositoryOf(image);
  return repo.slice(repo.lastIndexOf('/') + 1).startsWith('sentinel');
};

export interface ContainerSpec {
  name: string;
  image?: string;
  ports?: { name?: string; containerPort: number; protocol?: string }[];
  readinessProbe?: Probe;
  livenessProbe?: Probe;
  startupProbe?: Probe;
}

export interface Probe {
  httpGet?: { path?: string; port: number | string; scheme?: string };
  tcpSocket?: { port: number | string };
  grpc?: { port: number };
  exec?: unknown;
  failureThreshold?: number;
}

/** What the container's image serves (the contract table above). */
export function servedBy(c: ContainerSpec): Served[] {
  if (c.image && isSentinel(c.image)) return [{ port: SENTINEL_PORT, paths: SENTINEL_PATHS }];
  return (c.ports ?? []).filter((p) => (p.protocol ?? 'TCP') === 'TCP').map((p) => ({ port: p.containerPort, paths: ['/'] }));
}

/** A probe's port: a number, or a named container port. */
function resolvePort(c: ContainerSpec, port: number | string): number | undefined {
  if (typeof port === 'number') return port;
  if (/^\d+$/.test(port)) return Number(port);
  return c.ports?.find((p) => p.name === port)?.containerPort;
}

/** The kubelet's verdict: undefined when the probe passes, else its failure text. */
export function probeFailure(c: ContainerSpec, probe: Probe, podIP: string): string | undefined {
  if (probe.exec) return undefined;
  const target = probe.httpGet ?? probe.tcpSocket ?? probe.grpc;
  if (!target) return undefined;
  const port = resolvePort(c, target.port);
  if (port === undefined) return `unable to find port "${String(target.port)}"`;
  const served = servedBy(c).find((s) => s.port === port);
  const refused = `dial tcp ${podIP}:${port}: connect: connection refused`;
  if (probe.httpGet) {
    const scheme = (probe.httpGet.scheme ?? 'HTTP').toLowerCase();
    const path = probe.httpGet.path || '/';
    if (!served) return `Get "${scheme}://${podIP}:${port}${path}": ${refused}`;
    return served.paths.includes(path) ? undefined : 'HTTP probe failed with statuscode: 404';
  }
  return served ? undefined : refused;
}

/** The container spec of a pod by name (probes, ports and image live there). */
export function containerSpec(pod: KubeObject, name: string): ContainerSpec | undefined {
  return ((pod.spec?.containers ?? []) as ContainerSpec[]).find((c) => c.name === name);
}

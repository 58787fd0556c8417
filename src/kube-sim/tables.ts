// Server-side printing: the meta.k8s.io Table a client gets when it asks for one
// (`Accept: application/json;as=Table;v=v1;g=meta.k8s.io`, as `kubectl get` does), with the
// columns kubectl shows for each kind and a NAME/AGE table for the rest. Pure: objects and
// the current time in, a Table out. Rows carry the object as PartialObjectMetadata by default,
// the full object with includeObject=Object, none with includeObject=None.
import type { ResourceDef } from './resources';
import { selectorString } from './scale';
import type { KubeObject } from './types';

export type IncludeObject = 'None' | 'Metadata' | 'Object';

interface Column {
  name: string;
  type: string;
  format?: string;
  description: string;
  priority?: number;
}

type Cell = string | number;

interface Printer {
  columns: Column[];
  row(o: KubeObject, now: number): Cell[];
}

/** Go's duration.HumanDuration, which kubectl's AGE column uses. */
export function humanDuration(ms: number): string {
  const seconds = Math.floor(ms / 1000);
  if (seconds < -1) return '<invalid>';
  if (seconds < 0) return '0s';
  if (seconds < 120) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 10) return seconds % 60 === 0 ? `${minutes}m` : `${minutes}m${seconds % 60}s`;
  if (minutes < 180) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 8) return minutes % 60 === 0 ? `${hours}h` : `${hours}h${minutes % 60}m`;
  if (hours < 48) return `${hours}h`;
  if (hours < 24 * 8) return hours % 24 === 0 ? `${Math.floor(hours / 24)}d` : `${Math.floor(hours / 24)}d${hours % 24}h`;
  if (hours < 24 * 365 * 2) return `${Math.floor(hours / 24)}d`;
  if (hours < 24 * 365 * 8) {
    const d = Math.floor(hours / 24) % 365;
    return d === 0 ? `${Math.floor(hours / 24 / 365)}y` : `${Math.floor(hours / 24 / 365)}y${d}d`;
  }
  return `${Math.floor(hours / 24 / 365)}y`;
}

const since = (ts: unknown, now: number): string => (typeof ts === 'string' && ts ? humanDuration(now - Date.parse(ts)) : '<unknown>');
const age = (o: KubeObject, now: number) => since(o.metadata.creationTimestamp, now);

const NAME: Column = { name: 'Name', type: 'string', format: 'name', description: 'Name must be unique within a namespace.' };
const AGE: Column = { name: 'Age', type: 'string', description: 'CreationTimestamp is the time the object was created.' };
const col = (name: string, description: string, priority = 0): Column => ({ name, type: 'string', description, ...(priority ? { priority } : {}) });

const containers = (o: KubeObject): { name: string; image?: string }[] => o.spec?.template?.spec?.containers ?? [];
const WORKLOAD_WIDE = [col('Containers', 'Names of each container in the template.', 1), col('Images', 'Images referenced by each container in the template.', 1)];
const workloadWide = (o: KubeObject) => [containers(o).map((c) => c.name).join(','), containers(o).map((c) => c.image ?? '').join(',')];

interface ContainerStatus {
  ready?: boolean;
  restartCount?: number;
  state?: { waiting?: { reason?: string }; running?: unknown; terminated?: { reason?: string; exitCode?: number; signal?: number } };
  lastState?: { terminated?: { finishedAt?: string } };
}

/** READY, STATUS and RESTARTS of a pod, derived as kubectl's pod printer does. */
export function podSummary(pod: KubeObject, now: number): { ready: string; status: string; restarts: string } {
  const statuses: ContainerStatus[] = pod.status?.containerStatuses ?? [];
  let reason: string = pod.status?.reason ?? pod.status?.phase ?? 'Pending';
  let readyCount = 0;
  let restarts = 0;
  let lastRestart: number | undefined;
  for (const cs of [...statuses].reverse()) {
    restarts += cs.restartCount ?? 0;
    const finished = cs.lastState?.terminated?.finishedAt;
    if (finished) lastRestart = Math.max(lastRestart ?? 0, Date.parse(finished));
    const t = cs.state?.terminated;
    if (cs.state?.waiting?.reason) reason = cs.state.waiting.reason;
    else if (t?.reason) reason = t.reason;
    else if (t) reason = t.signal ? `Signal:${t.signal}` : `ExitCode:${t.exitCode ?? 0}`;
    else if (cs.ready && cs.state?.running) readyCount++;
  }
  if (pod.metadata.deletionTimestamp) reason = 'Terminating';
  const total = (pod.spec?.containers ?? []).length;
  const restartText = restarts > 0 && lastRestart !== undefined ? `${restarts} (${humanDuration(now - lastRestart)} ago)` : String(restarts);
  return { ready: `${readyCount}/${total}`, status: reason, restarts: restartText };
}

const servicePorts = (o: KubeObject): string => {
  const ports: { port: number; protocol?: string; nodePort?: number }[] = o.spec?.ports ?? [];
  if (ports.length === 0) return '<none>';
  return ports.map((p) => `${p.port}${p.nodePort ? `:${p.nodePort}` : ''}/${p.protocol ?? 'TCP'}`).join(',');
};

const dataCount = (o: KubeObject) => Object.keys(o.data ?? {}).length + Object.keys(o.binaryData ?? {}).length;

const PRINTERS: Record<string, Printer> = {
  Pod: {
    columns: [NAME, col('Ready', 'The aggregate readiness state of this pod for accepting traffic.'), col('Status', 'The aggregate status of the containers in this pod.'), col('Restarts', 'The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.'), AGE, col('IP', 'IP address allocated to the pod.', 1), col('Node', 'Name of the node this pod is running on.', 1), col('Nominated Node', 'Name of the node nominated by the scheduler.', 1), col('Readiness Gates', 'Pod readiness gates.', 1)],
    row: (o, now) => {
      const s = podSummary(o, now);
      return [o.metadata.name!, s.ready, s.status, s.restarts, age(o, now), o.status?.podIP ?? '<none>', o.spec?.nodeName ?? '<none>', '<none>', '<none>'];
    },
  },
  StatefulSet: {
    columns: [NAME, col('Ready', 'Number of the pod with ready state.'), AGE, ...WORKLOAD_WIDE],
    row: (o, now) => [o.metadata.name!, `${o.status?.readyReplicas ?? 0}/${o.spec?.replicas ?? 1}`, age(o, now), ...workloadWide(o)],
  },
  Deployment: {
    columns: [NAME, col('Ready', 'Number of the pod with ready state.'), col('Up-to-date', 'Total number of non-terminated pods targeted by this deployment that have the desired template spec.'), col('Available', 'Total number of available pods (ready for at least minReadySeconds) targeted by this deployment.'), AGE, ...WORKLOAD_WIDE, col('Selector', 'Label selector for pods.', 1)],
    row: (o, now) => [o.metadata.name!, `${o.status?.readyReplicas ?? 0}/${o.spec?.replicas ?? 1}`, o.status?.updatedReplicas ?? 0, o.status?.availableReplicas ?? 0, age(o, now), ...workloadWide(o), selectorString(o.spec?.selector)],
  },
  Service: {
    columns: [NAME, col('Type', 'The type of the service.'), col('Cluster-IP', 'The cluster IP of the service.'), col('External-IP', 'The external IPs of the service.'), col('Port(s)', 'The ports of the service.'), AGE, col('Selector', 'The selector of the service.', 1)],
    row: (o, now) => {
      const sel = Object.entries(o.spec?.selector ?? {}).map(([k, v]) => `${k}=${v}`).join(',');
      return [o.metadata.name!, o.spec?.type ?? 'ClusterIP', o.spec?.clusterIP || '<none>', (o.spec?.externalIPs ?? []).join(',') || '<none>', servicePorts(o), age(o, now), sel || '<none>'];
    },
  },
  PodDisruptionBudget: {
    columns: [NAME, col('Min Available', 'The minimum number of pods that must be available.'), col('Max Unavailable', 'The maximum number of pods that may be unavailable.'), col('Allowed Disruptions', 'Calculated number of pods that may be disrupted at this time.'), AGE],
    row: (o, now) => [o.metadata.name!, String(o.spec?.minAvailable ?? 'N/A'), String(o.spec?.maxUnavailable ?? 'N/A'), o.status?.disruptionsAllowed ?? 0, age(o, now)],
  },
  HorizontalPodAutoscaler: {
    columns: [NAME, col('Reference', 'The reference to the autoscaled resource.'), col('Targets', 'The current and target values of the metrics.'), col('MinPods', 'The lower limit of replicas.'), col('MaxPods', 'The upper limit of replicas.'), col('Replicas', 'The current number of replicas.'), AGE],
    row: (o, now) => {
      const target = (o.spec?.metrics ?? []).find((m: any) => m.resource?.name === 'cpu')?.resource?.target?.averageUtilization;
      const current = (o.status?.currentMetrics ?? []).find((m: any) => m.resource?.name === 'cpu')?.resource?.current?.averageUtilization;
      const ref = o.spec?.scaleTargetRef ?? {};
      return [o.metadata.name!, `${ref.kind}/${ref.name}`, `cpu: ${current === undefined ? '<unknown>' : `${current}%`}/${target ?? '<unknown>'}%`, o.spec?.minReplicas ?? 1, o.spec?.maxReplicas ?? 0, o.status?.currentReplicas ?? 0, age(o, now)];
    },
  },
  Lease: {
    columns: [NAME, col('Holder', 'The holder of the lease.'), AGE],
    row: (o, now) => [o.metadata.name!, o.spec?.holderIdentity ?? '', age(o, now)],
  },
  Namespace: {
    columns: [NAME, col('Status', 'The status of the namespace.'), AGE],
    row: (o, now) => [o.metadata.name!, o.status?.phase ?? 'Active', age(o, now)],
  },
  ConfigMap: { columns: [NAME, col('Data', 'Number of keys in the config map.'), AGE], row: (o, now) => [o.metadata.name!, dataCount(o), age(o, now)] },
  Secret: { columns: [NAME, col('Type', 'The type of the secret.'), col('Data', 'Number of keys in the secret.'), AGE], row: (o, now) => [o.metadata.name!, o.type ?? 'Opaque', dataCount(o), age(o, now)] },
  ResourceQuota: {
    columns: [NAME, AGE, col('Request', 'The used and hard quota of each counted resource.'), col('Limit', 'The used and hard quota of each limit.')],
    row: (o, now) => {
      const hard: Record<string, string> = o.status?.hard ?? o.spec?.hard ?? {};
      const used: Record<string, string> = o.status?.used ?? {};
      const fmt = (keys: string[]) => keys.map((k) => `${k}: ${used[k] ?? '0'}/${hard[k]}`).join(', ');
      const keys = Object.keys(hard).sort();
      return [o.metadata.name!, age(o, now), fmt(keys.filter((k) => !k.startsWith('limits.'))), fmt(keys.filter((k) => k.startsWith('limits.')))];
    },
  },
  Event: {
    columns: [col('Last Seen', 'The time at which the most recent occurrence of this event was recorded.'), col('Type', 'Type of this event (Normal, Warning).'), col('Reason', 'The reason for the transition into the object\'s current status.'), col('Object', 'The object that this event is about.'), col('Subobject', 'The part of the object this event is about.', 1), col('Source', 'The component reporting this event.', 1), col('Message', 'A human-readable description of the status of this operation.'), col('First Seen', 'The time at which the event was first recorded.', 1), col('Count', 'The number of times this event has occurred.', 1), { ...NAME, priority: 1 }],
    row: (o, now) => {
      const src = o.source ?? {};
      const io = o.involvedObject ?? {};
      return [since(o.lastTimestamp ?? o.eventTime, now), o.type ?? '', o.reason ?? '', `${String(io.kind ?? '').toLowerCase()}/${io.name ?? ''}`, io.fieldPath ?? '', [src.component, src.host].filter(Boolean).join(', '), o.message ?? '', since(o.firstTimestamp ?? o.eventTime, now), String(o.count ?? 1), o.metadata.name!];
    },
  },
};

const DEFAULT_PRINTER: Printer = { columns: [NAME, AGE], row: (o, now) => [o.metadata.name!, age(o, now)] };

function rowObject(o: KubeObject, include: IncludeObject): unknown {
  if (include === 'None') return undefined;
  if (include === 'Object') return o;
  return { kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: o.metadata };
}

export interface TableOptions {
  include: IncludeObject;
  now: number;
  /** meta.k8s.io version the client asked for (v1 or v1beta1). */
  version: string;
  resourceVersion?: string;
  continue?: string;
}

export function toTable(def: ResourceDef, objects: KubeObject[], opts: TableOptions): Record<string, unknown> {
  const printer = PRINTERS[def.kind] ?? DEFAULT_PRINTER;
  return {
    kind: 'Table',
    apiVersion: `meta.k8s.io/${opts.version}`,
    metadata: { ...(opts.resourceVersion ? { resourceVersion: opts.resourceVersion } : {}), ...(opts.continue ? { continue: opts.continue } : {}) },
    columnDefinitions: printer.columns.map((c) => ({ priority: 0, format: '', ...c })),
    rows: objects.map((o) => {
      const object = rowObject(o, opts.include);
      return { cells: printer.row(o, opts.now), ...(object ? { object } : {}) };
    }),
  };
}

/** The meta.k8s.io Table version the Accept header asks for, if any (v1 preferred). */
export function tableVersion(accept: string | undefined): string | undefined {
  if (!accept) return undefined;
  const offers = accept.split(',').map((offer) => {
    const [type, ...params] = offer.split(';').map((p) => p.trim().toLowerCase());
    return { type, params: new Map(params.map((p) => p.split('=') as [string, string])) };
  });
  const wants = (v: string) => offers.some((o) => o.type === 'application/json' && o.params.get('as') === 'table' && o.params.get('g') === 'meta.k8s.io' && o.params.get('v') === v);
  return ['v1', 'v1beta1'].find(wants);
}

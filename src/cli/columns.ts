// The columns of every list command, as kubectl lays them out: the default ones say what a row
// is and whether it is well (STATUS, READY x/y, AGE), `-o wide` adds the rest. Pure functions of
// the API's rows (types generated from its OpenAPI document).
import type { ApiKey, AuditEntry, DeploymentSummary, Environment, InvocationSummary, Project, QuarantineList, RegionView, SentinelView, VersionList, Workspace } from './api.gen';
import { ageOf, ready, type Column } from './output';
import { age, clip } from './render';

/** A deployment with its replicas running and wanted over its regions (read from its detail;
 *  undefined when not read, as with -o json). */
export interface DeploymentRow {
  d: DeploymentSummary;
  ready?: { running: number; wanted: number };
}

export const deploymentColumns: Column<DeploymentRow>[] = [
  { header: 'ID', cell: (r) => r.d.id },
  { header: 'VERSION', cell: (r) => r.d.version },
  { header: 'STATUS', cell: (r) => r.d.status },
  { header: 'READY', cell: (r) => (r.ready ? ready(r.ready.running, r.ready.wanted) : '-') },
  { header: 'REGIONS', cell: (r) => r.d.regions.join(',') },
  { header: 'AGE', cell: (r, now) => ageOf(r.d.createdAt, now), clock: true },
  { header: 'DESIRED', cell: (r) => r.d.desiredState, wide: true },
  { header: 'STRATEGY', cell: (r) => r.d.strategy.type, wide: true },
  { header: 'SOURCE', cell: (r) => clip(r.d.image ?? (r.d.buildContext ? `build:${r.d.buildContext}` : null), 60), wide: true },
  { header: 'RESOURCES', cell: (r) => `${r.d.cpuMillicores}m/${r.d.memoryMib}Mi`, wide: true },
  { header: 'ERROR', cell: (r) => clip(r.d.error, 60) },
];

export const sentinelColumns: Column<SentinelView>[] = [
  { header: 'ID', cell: (s) => s.id },
  { header: 'ENVIRONMENT', cell: (s) => s.environmentId },
  { header: 'REGION', cell: (s) => s.region },
  { header: 'READY', cell: (s) => ready(s.readyReplicas, s.replicas) },
  { header: 'UP-TO-DATE', cell: (s) => String(s.updatedReplicas) },
  { header: 'AVAILABLE', cell: (s) => String(s.availableReplicas) },
  { header: 'HEALTH', cell: (s) => s.health },
  { header: 'DEPLOY', cell: (s) => s.deployStatus },
  { header: 'AGE', cell: (s, now) => ageOf(s.createdAt, now), clock: true },
  { header: 'IMAGE', cell: (s) => s.image, wide: true },
  { header: 'RUNNING IMAGE', cell: (s) => s.runningImage ?? '-', wide: true },
  { header: 'DESIRED', cell: (s) => s.desiredState, wide: true },
];

const driftCell = (d: RegionView['drift'], now: number) => (d.repaired === 0 ? '0' : `${d.repaired} (last ${d.lastObject ?? '?'} ${age(d.lastAt, now)})`);

export const regionColumns: Column<RegionView>[] = [
  { header: 'REGION', cell: (r) => r.name },
  { header: 'STATUS', cell: (r) => r.status },
  { header: 'LAST SEEN', cell: (r, now) => age(r.lastSeenAt, now), clock: true },
  { header: 'LAG', cell: (r) => (r.status === 'never_seen' ? '-' : `${r.lag.changes} changes / ${r.lag.seconds}s`) },
  { header: 'LEADER', cell: (r) => (r.agent.id ? `${r.agent.id}${r.agent.leader ? '' : ' (standby)'}` : '-') },
  { header: 'DRIFT REPAIRED', cell: (r, now) => driftCell(r.drift, now), clock: true },
  { header: 'FAILURES', cell: (r) => String(r.failures.length) },
  { header: 'VERSION', cell: (r) => r.agent.version ?? '-', wide: true },
  { header: 'LAST FULL SYNC', cell: (r, now) => age(r.lastFullSyncAt, now), wide: true, clock: true },
  { header: 'OBJECTS', cell: (r) => Object.entries(r.objects).map(([k, n]) => `${n} ${k}`).join(', ') || '0', wide: true },
];

export const invocationColumns: Column<InvocationSummary>[] = [
  { header: 'ID', cell: (i) => i.id },
  { header: 'SERVICE', cell: (i) => i.service },
  { header: 'HANDLER', cell: (i) => i.handler },
  { header: 'KEY', cell: (i) => i.key ?? '-' },
  { header: 'STATUS', cell: (i) => i.status },
  { header: 'ATTEMPTS', cell: (i) => String(i.attempts) },
  { header: 'AGE', cell: (i, now) => ageOf(i.createdAt, now), clock: true },
  { header: 'LEASE OWNER', cell: (i) => i.leaseOwner ?? '-', wide: true },
  { header: 'PARENT', cell: (i) => i.parentId ?? '-', wide: true },
  { header: 'ERROR', cell: (i) => clip(i.error?.message, 50) },
];

type Version = VersionList['versions'][number];
export const versionColumns: Column<Version>[] = [
  { header: 'VERSION', cell: (v) => v.version },
  { header: 'DEPLOYMENT', cell: (v) => v.deploymentId },
  { header: 'STATUS', cell: (v) => v.status },
  { header: 'IMAGE', cell: (v) => clip(v.image, 40) },
  { header: 'AGE', cell: (v, now) => ageOf(v.createdAt, now), clock: true },
  { header: 'ROLLBACK OF', cell: (v) => v.rollbackOf?.version ?? '-' },
  { header: 'ROLLED BACK TO BY', cell: (v) => v.rolledBackBy.map((b) => b.version).join(',') || '-' },
];

type Quarantined = QuarantineList['images'][number];
export const quarantineColumns: Column<Quarantined>[] = [
  { header: 'IMAGE', cell: (q) => q.image },
  { header: 'DEPLOYMENT', cell: (q) => q.deploymentId },
  { header: 'AGE', cell: (q, now) => ageOf(q.createdAt, now), clock: true },
  { header: 'REASON', cell: (q) => clip(q.reason, 80) },
];

export const workspaceColumns: Column<Workspace | Project>[] = [
  { header: 'ID', cell: (w) => w.id },
  { header: 'NAME', cell: (w) => w.name },
  { header: 'AGE', cell: (w, now) => ageOf(w.createdAt, now), clock: true },
  { header: 'WORKSPACE', cell: (w) => ('workspaceId' in w ? w.workspaceId : '-'), wide: true },
];

export const environmentColumns: Column<Environment>[] = [
  { header: 'ID', cell: (e) => e.id },
  { header: 'SLUG', cell: (e) => e.slug },
  { header: 'REGIONS', cell: (e) => e.regions.join(',') || '-' },
  { header: 'HOSTNAME', cell: (e) => e.hostname },
  { header: 'AGE', cell: (e, now) => ageOf(e.createdAt, now), clock: true },
  { header: 'WORKSPACE', cell: (e) => e.workspaceId, wide: true },
  { header: 'PROJECT', cell: (e) => e.projectId, wide: true },
];

const scopeText = (s: ApiKey['scope']) => [s.workspaceId, s.projectId, s.environmentId].filter(Boolean).join('/');
export const keyColumns: Column<ApiKey>[] = [
  { header: 'ID', cell: (k) => k.id },
  { header: 'NAME', cell: (k) => clip(k.name, 30) },
  { header: 'SCOPE', cell: (k) => scopeText(k.scope) },
  { header: 'PERMISSIONS', cell: (k) => k.permissions.join(',') },
  { header: 'EXPIRES', cell: (k) => k.expiresAt ?? '-' },
  { header: 'REVOKED', cell: (k) => k.revokedAt ?? '-' },
  { header: 'AGE', cell: (k, now) => ageOf(k.createdAt, now), clock: true, wide: true },
  { header: 'CREATED BY', cell: (k) => k.createdBy, wide: true },
];

export const auditColumns: Column<AuditEntry>[] = [
  { header: 'AT', cell: (e) => e.at },
  { header: 'ACTOR', cell: (e) => `${e.actor.type}:${e.actor.id ?? '-'}` },
  { header: 'ACTION', cell: (e) => e.action },
  { header: 'TARGET', cell: (e) => e.target ?? '-' },
  { header: 'OUTCOME', cell: (e) => e.outcome },
  { header: 'SOURCE', cell: (e) => e.sourceIp ?? '-' },
  { header: 'REQUEST', cell: (e) => e.requestId ?? '-', wide: true },
  { header: 'TRACE', cell: (e) => e.traceId ?? '-', wide: true },
];

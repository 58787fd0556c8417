// Regions as rows: liveness flagged, lag and object counts in words. Pure.
import { ago } from '../format';
import type { RegionView } from '../../../cli/api.gen';

export interface RegionRow {
  name: string;
  status: string;
  /** Offline or never seen: the page marks the row and says so in text, not colour alone. */
  flagged: boolean;
  statusLabel: string;
  lastSeen: string;
  lag: string;
  leader: string;
  lastFullSync: string;
  objects: string;
  /** Objects krane put back after hand changes, and the last one. */
  drift: string;
  /** Desired states the cluster refused, each with its reason. */
  failures: string[];
}

const LABELS: Record<string, string> = { online: 'online', offline: 'offline', never_seen: 'never seen' };

export function objectsText(o: RegionView['objects']): string {
  if (o === null || o === undefined) return '–';
  if (typeof o === 'number') return String(o);
  const parts = Object.entries(o).map(([k, v]) => `${v} ${k}`);
  return parts.length ? parts.join(', ') : '0';
}

export function regionRow(r: RegionView, now: number): RegionRow {
  return {
    name: r.name,
    status: r.status,
    flagged: r.status !== 'online',
    statusLabel: LABELS[r.status] ?? r.status,
    lastSeen: ago(r.lastSeenAt, now),
    lag: r.lag ? `${r.lag.changes} changes, ${r.lag.seconds}s` : '–',
    leader: r.agent ? `${r.agent.id}${r.agent.leader ? ' (leader)' : ''}${r.agent.version ? ` v${r.agent.version}` : ''}` : '–',
    lastFullSync: ago(r.lastFullSyncAt, now),
    objects: objectsText(r.objects),
    drift: r.drift ? (r.drift.repaired ? `${r.drift.repaired} repaired, last ${r.drift.lastObject ?? '?'} ${ago(r.drift.lastAt, now)}` : 'none') : '–',
    failures: (r.failures ?? []).map((f) => `${f.resourceType}/${f.resourceId}: ${f.code}: ${f.reason}`),
  };
}

/** Flagged regions first (what needs attention), then by name. */
export function regionRows(list: RegionView[], now: number): RegionRow[] {
  return list
    .map((r) => regionRow(r, now))
    .sort((a, b) => Number(b.flagged) - Number(a.flagged) || a.name.localeCompare(b.name));
}

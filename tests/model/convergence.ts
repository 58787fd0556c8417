// Whether a sequence's environment has converged (issue 33: krane and ctrl restarts with
// convergence checked): once faults healed and every deployment settled, each region's cluster
// runs exactly what desired state says of the environment, and its routes are the table's, with
// the addresses of the pods that are ready (traffic-rules.ts#routesBreaks). Pure: desired state
// (from the database) and each region's objects (from its simulator) in, differences out.
import { routesBreaks, showTable, type Entry, type RoutedEntry } from './traffic-rules';

/** Desired state of one deployment in one region (its topology row and deployment fields). */
export interface DesiredWorkload {
  deploymentId: string;
  running: boolean;
  image: string | null;
  replicas: number;
  autoscaling: { minReplicas: number; maxReplicas: number } | null;
}

export interface DesiredEnvironment {
  workloads: Record<string, DesiredWorkload[]>;
  /** Regions with a sentinel row of the environment. */
  sentinelRegions: string[];
  table: Entry[];
  /** Where the table applies (its backends' regions); empty when it is empty. */
  tableRegions: string[];
}

/** A region's objects of the environment, as its cluster has them (none being deleted). */
export interface RegionObjects {
  statefulsets: Record<string, { image: string; replicas: number }>;
  /** Deployments with a HorizontalPodAutoscaler. */
  autoscalers: string[];
  sentinels: number;
  /** The routes ConfigMap's backends, null when there is none. */
  routes: RoutedEntry[] | null;
  /** Stable addresses of each deployment's ready pods. */
  ready: Record<string, string[]>;
}

export function convergenceBreaks(want: DesiredEnvironment, have: Record<string, RegionObjects>): string[] {
  const out: string[] = [];
  for (const [region, o] of Object.entries(have)) {
    const wanted = new Map((want.workloads[region] ?? []).filter((w) => w.running && w.image).map((w) => [w.deploymentId, w]));
    for (const [id, w] of wanted) {
      const sts = o.statefulsets[id];
      if (!sts) {
        out.push(`${region}: ${id} is wanted but has no StatefulSet`);
        continue;
      }
      if (sts.image !== w.image) out.push(`${region}: ${id} runs ${sts.image}, wants ${w.image}`);
      if (w.autoscaling) {
        if (!o.autoscalers.includes(id)) out.push(`${region}: ${id} is autoscaled but has no HorizontalPodAutoscaler`);
        if (sts.replicas < w.autoscaling.minReplicas || sts.replicas > w.autoscaling.maxReplicas) out.push(`${region}: ${id} has ${sts.replicas} replicas, outside ${w.autoscaling.minReplicas}-${w.autoscaling.maxReplicas}`);
      } else if (sts.replicas !== w.replicas) out.push(`${region}: ${id} has ${sts.replicas} replicas, wants ${w.replicas}`);
    }
    for (const id of Object.keys(o.statefulsets)) if (!wanted.has(id)) out.push(`${region}: ${id} has a StatefulSet but is not wanted there`);
    const sentinelWanted = want.sentinelRegions.includes(region);
    if (sentinelWanted !== o.sentinels > 0) out.push(`${region}: ${o.sentinels} sentinel Deployments, ${sentinelWanted ? 'wants one' : 'wants none'}`);
    const routesWanted = want.table.length > 0 && want.tableRegions.includes(region);
    if (!routesWanted) {
      if (o.routes) out.push(`${region}: a routes ConfigMap (${showTable(o.routes)}) where none is wanted`);
      continue;
    }
    if (!o.routes) {
      out.push(`${region}: no routes ConfigMap, wants ${showTable(want.table)}`);
      continue;
    }
    if (showTable(o.routes) !== showTable(want.table)) out.push(`${region}: routes ${showTable(o.routes)}, wants ${showTable(want.table)}`);
    for (const b of routesBreaks(region, o.routes, (id) => o.ready[id] ?? [])) out.push(b.message);
  }
  return out;
}

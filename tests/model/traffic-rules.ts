// The traffic rules (issues 23 and 33, DESIGN section 11), stated once: the lifecycle model
// (lifecycle-model.ts) and the chaos harness's invariants (bench/chaos/invariants.ts) both judge
// routing tables with these functions, so the two cannot drift apart (they did: the model skipped
// a backend it did not know, the harness failed it). Pure: facts in, breaks out.
//
//   weights     a table's weights are whole percents, 0-100, each deployment at most once, and
//               sum to 100; or the table is empty (nothing serves)
//   backend     every entry names a deployment that exists, in the table's own environment
//   serving     no entry is stopped, failed, rolled back or meant to be stopped
//   ready       an entry with a share above 0 has a ready pod in every region it runs in
//   addresses   where a region's routes are applied, an entry with a share lists exactly the
//               addresses of the deployment's ready pods there (an autoscaler's pods included);
//               judged once things have settled, since the routes follow the pods by a report

export interface Entry {
  deploymentId: string;
  weight: number;
}

/** What is known of an entry's deployment (undefined: no such deployment). */
export interface BackendFacts {
  environmentId: string;
  status: string;
  desiredState: string;
  /** Ready pods (or instances krane reports running) per region the deployment runs in. */
  ready: Readonly<Record<string, number>>;
}

export type TrafficRule = 'weights' | 'backend' | 'serving' | 'ready' | 'addresses';

export interface TrafficBreak {
  rule: TrafficRule;
  message: string;
  deploymentId?: string;
}

/** Statuses that never carry traffic. */
export const OUT_OF_TRAFFIC: ReadonlySet<string> = new Set(['stopped', 'failed', 'rolled_back']);

export const showTable = (t: readonly Entry[]) => t.map((b) => `${b.deploymentId}:${b.weight}`).join(', ') || 'empty';

/** The rules one table breaks, given what is known of its entries' deployments. */
export function tableBreaks(environmentId: string, table: readonly Entry[], facts: (deploymentId: string) => BackendFacts | undefined): TrafficBreak[] {
  const out: TrafficBreak[] = [];
  const shown = showTable(table);
  const sum = table.reduce((n, b) => n + b.weight, 0);
  if (table.length > 0 && sum !== 100) out.push({ rule: 'weights', message: `weights of ${environmentId} sum to ${sum}: ${shown}` });
  const seen = new Set<string>();
  for (const b of table) {
    if (!Number.isInteger(b.weight) || b.weight < 0 || b.weight > 100) out.push({ rule: 'weights', deploymentId: b.deploymentId, message: `${b.deploymentId} has weight ${b.weight} in ${environmentId}: ${shown}` });
    if (seen.has(b.deploymentId)) out.push({ rule: 'weights', deploymentId: b.deploymentId, message: `${b.deploymentId} appears twice in ${environmentId}: ${shown}` });
    seen.add(b.deploymentId);
    const d = facts(b.deploymentId);
    if (!d) {
      out.push({ rule: 'backend', deploymentId: b.deploymentId, message: `${b.deploymentId} is in the table of ${environmentId} but no such deployment exists: ${shown}` });
      continue;
    }
    if (d.environmentId !== environmentId) {
      out.push({ rule: 'backend', deploymentId: b.deploymentId, message: `${b.deploymentId} of environment ${d.environmentId} is in the table of ${environmentId}: ${shown}` });
      continue;
    }
    if (d.desiredState !== 'running' || OUT_OF_TRAFFIC.has(d.status)) {
      out.push({ rule: 'serving', deploymentId: b.deploymentId, message: `${b.deploymentId} (${d.status}, desired ${d.desiredState}) is in the table of ${environmentId}: ${shown}` });
    } else if (b.weight > 0) {
      const missing = Object.entries(d.ready).filter(([, n]) => n < 1).map(([region]) => region);
      if (missing.length) out.push({ rule: 'ready', deploymentId: b.deploymentId, message: `${b.deploymentId} has ${b.weight}% of ${environmentId} but no ready pod in ${missing.join(', ')}` });
    }
  }
  return out;
}

/** A region's routes as applied there (its ConfigMap): each entry with the addresses it lists. */
export interface RoutedEntry extends Entry {
  addresses: readonly string[];
}

/**
 * The rules a region's applied routes break against the pods that are ready there: every entry
 * with a share lists exactly its deployment's ready pods' addresses (`readyAddresses`).
 */
export function routesBreaks(region: string, routed: readonly RoutedEntry[], readyAddresses: (deploymentId: string) => readonly string[]): TrafficBreak[] {
  const out: TrafficBreak[] = [];
  for (const b of routed) {
    if (b.weight === 0) continue;
    const want = [...readyAddresses(b.deploymentId)].sort();
    const have = [...b.addresses].sort();
    if (want.join(' ') !== have.join(' ')) {
      out.push({ rule: 'addresses', deploymentId: b.deploymentId, message: `${region}'s routes give ${b.deploymentId} (${b.weight}%) ${have.length} addresses [${have.join(', ')}], its ready pods there are ${want.length} [${want.join(', ')}]` });
    }
  }
  return out;
}

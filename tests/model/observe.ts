// What the model's driver reads of the real system: the snapshot the rules judge (one repeatable-
// read transaction, the pods read around it) and, at settle, each region's objects of the
// sequence's environment beside desired state (convergence.ts). Reads only; objects are found
// by the label contract of API.md, not by krane's code.
import type { TestStack } from '../helpers/stack';
import { isPodReady, resourceForKind } from '../../src/kube-sim';
import type { DeploymentView, Model, Snapshot } from './lifecycle-model';
import type { DesiredEnvironment, DesiredWorkload, RegionObjects } from './convergence';

const POD = resourceForKind('v1', 'Pod')!;
const STS = resourceForKind('apps/v1', 'StatefulSet')!;
const DEPLOYMENT = resourceForKind('apps/v1', 'Deployment')!;
const CONFIG_MAP = resourceForKind('v1', 'ConfigMap')!;
const HPA = resourceForKind('autoscaling/v2', 'HorizontalPodAutoscaler')!;
const DEPLOYMENT_ID = 'unkey.com/deployment.id';
const ENVIRONMENT_ID = 'unkey.com/environment.id';

type Obj = { metadata: { name?: string; namespace?: string; labels?: Record<string, string>; deletionTimestamp?: string }; spec?: any; data?: Record<string, string> };
const live = (o: Obj) => !o.metadata.deletionTimestamp;

/** Ready pods of `ids` per region, from each simulator's store (the truth krane reports from). */
export function readyPods(stack: TestStack, ids: readonly string[]): Record<string, Record<string, number>> {
  const want = new Set(ids);
  const out: Record<string, Record<string, number>> = {};
  for (const [region, r] of stack.regions) {
    for (const pod of r.sim.sim.store.list(POD, undefined) as Obj[]) {
      const id = pod.metadata.labels?.[DEPLOYMENT_ID];
      if (!id || !want.has(id) || !isPodReady(pod as never) || !live(pod)) continue;
      (out[id] ??= {})[region] = (out[id]![region] ?? 0) + 1;
    }
  }
  return out;
}

interface Row {
  id: string;
  status: string;
  desiredState: string;
  error: string | null;
  environmentId: string;
  image: string | null;
  regions: string[];
  replicas: number;
  autoscaling: { minReplicas: number; maxReplicas: number } | null;
  rolledBackFrom: string | null;
  strategy: { type: string } | null;
  topologyRunning: boolean;
}

/** The rules' snapshot: every table entry's deployment is read too, the model's or not. */
export async function readSnapshot(stack: TestStack, environmentId: string, m: Model, failedChecks: (query: string) => number): Promise<Snapshot> {
  const ids = m.deployments.map((d) => d.id);
  const before = readyPods(stack, ids);
  const read = await stack.db.sql.begin('isolation level repeatable read read only', async (tx) => {
    const [routes] = await tx<{ backends: { deploymentId: string; weight: number }[] }[]>`SELECT backends FROM environment_routes WHERE environment_id = ${environmentId}`;
    const named = [...new Set([...ids, ...(routes?.backends ?? []).map((b) => b.deploymentId)])];
    const rows = await tx<Row[]>`
      SELECT d.id, d.status, d.desired_state, d.error, d.environment_id, d.image, d.regions, d.replicas, d.autoscaling, d.rolled_back_from, d.strategy,
             EXISTS (SELECT 1 FROM deployment_topology t WHERE t.deployment_id = d.id AND t.desired_status = 'running') AS topology_running
      FROM deployments d WHERE d.id = ANY(${named}::text[])`;
    const regions = await tx<{ region: string; status: string; ageMs: number | null }[]>`
      SELECT region, status, (extract(epoch FROM now() - last_seen_at) * 1000)::int AS age_ms FROM region_liveness`;
    const quarantined = await tx<{ image: string }[]>`SELECT image FROM image_quarantine WHERE environment_id = ${environmentId}`;
    const [snt] = await tx<{ n: number }[]>`SELECT count(*)::int AS n FROM sentinels WHERE environment_id = ${environmentId} AND deploy_status = 'progressing'`;
    const [env] = await tx<{ deleted: boolean }[]>`SELECT deleted_at IS NOT NULL AS deleted FROM environments WHERE id = ${environmentId}`;
    // The stable each walk took as it began (deploy.ts's traffic-start step, journaled as { v }).
    const walks = await tx<{ deploymentId: string; stable: string | null }[]>`
      SELECT i.object_key AS deployment_id, j.value->'v'->>'stable' AS stable
        FROM engine_invocations i JOIN engine_journal j ON j.invocation_id = i.id AND j.name = 'traffic-start' AND j.status = 'done'
       WHERE i.service = 'DeployService' AND i.handler = 'deploy' AND i.object_key = ANY(${ids}::text[])`;
    return { routes, rows: [...rows], regions: [...regions], quarantined: quarantined.map((q) => q.image), progressing: snt!.n, deleted: env?.deleted ?? true, walks: [...walks] };
  });
  const afterPods = readyPods(stack, read.rows.map((r) => r.id));
  const readyPodsOf: Snapshot['readyPods'] = {};
  for (const r of read.rows) for (const region of stack.regions.keys()) (readyPodsOf[r.id] ??= {})[region] = Math.max(before[r.id]?.[region] ?? 0, afterPods[r.id]?.[region] ?? 0);
  const view = (r: Row): DeploymentView => ({
    status: r.status, desiredState: r.desiredState, error: r.error, environmentId: r.environmentId, image: r.image, regions: r.regions, replicas: r.replicas,
    autoscaling: r.autoscaling ? { minReplicas: r.autoscaling.minReplicas, maxReplicas: r.autoscaling.maxReplicas } : null,
    rolledBackFrom: r.rolledBackFrom, strategy: r.strategy?.type ?? 'rolling', topologyRunning: r.topologyRunning,
  });
  return {
    environmentId,
    table: (read.routes?.backends ?? []).map((b) => ({ deploymentId: b.deploymentId, weight: b.weight })),
    deployments: Object.fromEntries(read.rows.map((r) => [r.id, view(r)])),
    readyPods: readyPodsOf,
    failedChecks: Object.fromEntries(m.deployments.map((d) => [d.query, failedChecks(d.query)])),
    regionStatus: Object.fromEntries(read.regions.map((r) => [r.region, r.status])),
    regionAgeMs: Object.fromEntries(read.regions.map((r) => [r.region, r.ageMs ?? Number.MAX_SAFE_INTEGER])),
    quarantined: read.quarantined,
    sentinelsProgressing: read.progressing,
    environmentDeleted: read.deleted,
    walkStables: read.walks.reduce<Record<string, string[]>>((acc, w) => (w.stable && (acc[w.deploymentId] ??= []).push(w.stable), acc), {}),
  };
}

/** Desired state of the environment, as the feed derives it for krane. */
export async function readDesired(stack: TestStack, environmentId: string): Promise<DesiredEnvironment> {
  return stack.db.sql.begin('isolation level repeatable read read only', async (tx) => {
    const topo = await tx<(DesiredWorkload & { region: string })[]>`
      SELECT t.deployment_id, t.region, t.desired_status = 'running' AS running, d.image, t.replicas, d.autoscaling
      FROM deployment_topology t JOIN deployments d ON d.id = t.deployment_id WHERE d.environment_id = ${environmentId}`;
    const snts = await tx<{ region: string }[]>`SELECT region FROM sentinels WHERE environment_id = ${environmentId}`;
    const [routes] = await tx<{ backends: { deploymentId: string; weight: number }[]; regions: string[] }[]>`SELECT backends, regions FROM environment_routes WHERE environment_id = ${environmentId}`;
    const workloads: DesiredEnvironment['workloads'] = {};
    for (const t of topo) (workloads[t.region] ??= []).push({ deploymentId: t.deploymentId, running: t.running, image: t.image, replicas: t.replicas, autoscaling: t.autoscaling });
    return { workloads, sentinelRegions: snts.map((s) => s.region), table: routes?.backends ?? [], tableRegions: routes?.regions ?? [] };
  });
}

/** Each region's objects of the environment, from its simulator. */
export function readObjects(stack: TestStack, environmentId: string): Record<string, RegionObjects> {
  const out: Record<string, RegionObjects> = {};
  const ofEnv = (o: Obj) => live(o) && o.metadata.labels?.[ENVIRONMENT_ID] === environmentId;
  for (const [region, r] of stack.regions) {
    const store = r.sim.sim.store;
    const statefulsets: RegionObjects['statefulsets'] = {};
    for (const s of (store.list(STS, undefined) as Obj[]).filter(ofEnv)) {
      statefulsets[s.metadata.labels![DEPLOYMENT_ID]!] = { image: s.spec?.template?.spec?.containers?.[0]?.image ?? '', replicas: s.spec?.replicas ?? 1 };
    }
    const autoscalers = (store.list(HPA, undefined) as Obj[]).filter(ofEnv).map((h) => h.metadata.labels?.[DEPLOYMENT_ID] ?? '');
    const sentinels = (store.list(DEPLOYMENT, 'sentinel') as Obj[]).filter(ofEnv).length;
    const cm = (store.list(CONFIG_MAP, 'sentinel') as Obj[]).find((c) => live(c) && c.metadata.name === `routes-${environmentId}`);
    const routes = cm ? (JSON.parse(cm.data?.['routes.json'] ?? '{"backends":[]}') as { backends: RegionObjects['routes'] }).backends : null;
    const ready: Record<string, string[]> = {};
    for (const pod of (store.list(POD, undefined) as Obj[]).filter(ofEnv)) {
      const id = pod.metadata.labels?.[DEPLOYMENT_ID];
      if (!id || !isPodReady(pod as never)) continue;
      (ready[id] ??= []).push(`${pod.metadata.name}.${pod.spec?.subdomain}.${pod.metadata.namespace}.svc.cluster.local`);
    }
    out[region] = { statefulsets, autoscalers, sentinels, routes, ready };
  }
  return out;
}

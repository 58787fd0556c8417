// What the harness watches while a schedule runs, through SQL reads on its own connection and
// the simulator's HTTP API only (no code of ctrl or krane): a timeline of desired state (which
// resources each region should run), the deployment status events ctrl publishes with NOTIFY,
// and each region's actual managed objects.
import type postgres from 'postgres';
import type { DesiredSpec, StatusEvent, TrafficRow } from './invariants';
import type { Entry, RoutedEntry } from '../../tests/model/traffic-rules';
import { SIM_TOKEN } from '../../src/kube-sim';

/** Managed-object selector (API.md "Labels on Kubernetes objects"). */
const MANAGED = 'app.kubernetes.io/managed-by=krane';
/** The channel ctrl publishes live events on (one NOTIFY per status write). */
const EVENTS_CHANNEL = 'unkey_events';

export interface Sample {
  t: number;
  /** Resource key → spec, per region: `deployment/<id>` and `sentinel/<id>`. */
  wanted: Map<string, Map<string, DesiredSpec>>;
}

/**
 * Desired state as the feed derives it: a topology is wanted when running and its deployment
 * has an image; a sentinel when running.
 */
export async function readDesired(sql: postgres.Sql): Promise<Sample['wanted']> {
  const out = new Map<string, Map<string, DesiredSpec>>();
  const put = (region: string, key: string, spec: DesiredSpec) => {
    if (!out.has(region)) out.set(region, new Map());
    out.get(region)!.set(key, spec);
  };
  const [topo, sent] = await Promise.all([
    sql<{ id: string; region: string; replicas: number; image: string; maxReplicas: number | null }[]>`
      SELECT t.deployment_id AS id, t.region, t.replicas, d.image, (d.autoscaling->>'maxReplicas')::int AS "maxReplicas" FROM deployment_topology t
      JOIN deployments d ON d.id = t.deployment_id WHERE t.desired_status = 'running' AND d.image IS NOT NULL`,
    sql<{ id: string; region: string; replicas: number; image: string }[]>`
      SELECT id, region, replicas, image FROM sentinels WHERE desired_state = 'running'`,
  ]);
  for (const r of topo) put(r.region, `deployment/${r.id}`, { replicas: r.replicas, image: r.image, ...(r.maxReplicas !== null ? { maxReplicas: r.maxReplicas } : {}) });
  for (const r of sent) put(r.region, `sentinel/${r.id}`, { replicas: r.replicas, image: r.image });
  return out;
}

/** Samples desired state every `everyMs` until stopped; a failed read (PostgreSQL down) is a gap. */
export function sampleDesired(sql: postgres.Sql, everyMs: number): { samples: Sample[]; stop(): void } {
  const samples: Sample[] = [];
  let stopped = false;
  const loop = async () => {
    while (!stopped) {
      const t = Date.now();
      try {
        samples.push({ t, wanted: await readDesired(sql) });
      } catch {
        // gap while the database is unreachable
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
  };
  void loop();
  return { samples, stop: () => (stopped = true) };
}

/** Deployment status events, tagged with the LISTEN session that saw them. */
export async function listenStatus(sql: postgres.Sql): Promise<{ events: StatusEvent[]; stop(): Promise<void> }> {
  const events: StatusEvent[] = [];
  let session = 0;
  const sub = await sql.listen(
    EVENTS_CHANNEL,
    (payload) => {
      try {
        const e = JSON.parse(payload) as { type: string; deploymentId?: string; status?: string; error?: string | null };
        if (e.type === 'deployment.status' && e.deploymentId && e.status) {
          events.push({ t: Date.now(), session, deploymentId: e.deploymentId, status: e.status, error: e.error ?? null });
        }
      } catch {
        // not ours
      }
    },
    // Called on every (re)connect: events missed in between must not look consecutive.
    () => void session++,
  );
  return { events, stop: () => sub.unlisten() };
}

async function listItems(url: string): Promise<any[]> {
  // The simulator authenticates like a real API server: the harness reads as its admin.
  const r = await fetch(url, { signal: AbortSignal.timeout(5_000), headers: { authorization: `Bearer ${SIM_TOKEN}` } });
  if (!r.ok) throw new Error(`${url}: ${r.status}`);
  return ((await r.json()) as { items: any[] }).items;
}

/** A region's managed workloads as the cluster has them (objects being deleted count as gone). */
export async function readActual(simUrl: string): Promise<Map<string, DesiredSpec>> {
  const out = new Map<string, DesiredSpec>();
  const q = `labelSelector=${encodeURIComponent(MANAGED)}`;
  const [sts, deps] = await Promise.all([
    listItems(`${simUrl}/apis/apps/v1/namespaces/unkey/statefulsets?${q}`),
    listItems(`${simUrl}/apis/apps/v1/namespaces/sentinel/deployments?${q}`),
  ]);
  const spec = (o: any): DesiredSpec => ({ replicas: o.spec?.replicas ?? 1, image: o.spec?.template?.spec?.containers?.[0]?.image ?? '' });
  for (const o of sts) {
    const id = o.metadata?.labels?.['unkey.com/deployment.id'];
    if (id && !o.metadata.deletionTimestamp) out.set(`deployment/${id}`, spec(o));
  }
  for (const o of deps) {
    const id = o.metadata?.labels?.['unkey.com/sentinel.id'];
    if (id && !o.metadata.deletionTimestamp) out.set(`sentinel/${id}`, spec(o));
  }
  return out;
}

export interface AuditEntry {
  seq: number;
  time: string;
  cause: string;
  kind: string;
  namespace?: string;
  name: string;
  labels: Record<string, string>;
  userAgent?: string;
}

export async function readDeletions(simUrl: string): Promise<{ entries: AuditEntry[]; dropped: number }> {
  const r = await fetch(`${simUrl}/_sim/audit/deletions`, { signal: AbortSignal.timeout(5_000) });
  return (await r.json()) as { entries: AuditEntry[]; dropped: number };
}

/** Every environment's routing table with its deployments' state, in one statement (one snapshot). */
export async function readTraffic(sql: postgres.Sql): Promise<TrafficRow[]> {
  const rows = await sql<(Omit<TrafficRow, 'running'> & { running: Record<string, number> | null })[]>`
    SELECT r.environment_id AS "environmentId", b->>'deploymentId' AS "deploymentId", (b->>'weight')::int AS weight, d.status, d.desired_state AS "desiredState",
           d.environment_id AS "deploymentEnvironmentId",
           (SELECT json_object_agg(t.region, (SELECT count(*) FROM instances i
                     WHERE i.deployment_id = t.deployment_id AND i.region = t.region AND i.status = 'running'))
              FROM deployment_topology t WHERE t.deployment_id = d.id AND t.desired_status = 'running') AS running
    FROM environment_routes r
    CROSS JOIN LATERAL jsonb_array_elements(r.backends) b
    LEFT JOIN deployments d ON d.id = b->>'deploymentId'`;
  return rows.map((r) => ({ ...r, running: r.running ?? {} }));
}

/** Samples the routing tables every `everyMs` until stopped, judging each sample at once (the
 *  rows are not kept: a long run would hold thousands). A failed read is a gap. */
export function sampleTraffic(sql: postgres.Sql, everyMs: number, judge: (t: number, rows: TrafficRow[]) => void): { samples(): number; stop(): void } {
  let stopped = false;
  let n = 0;
  const loop = async () => {
    while (!stopped) {
      const t = Date.now();
      try {
        judge(t, await readTraffic(sql));
        n++;
      } catch {
        // gap while the database is unreachable
      }
      await new Promise((r) => setTimeout(r, everyMs));
    }
  };
  void loop();
  return { samples: () => n, stop: () => (stopped = true) };
}

/** Each region's routing tables as desired state has them: environment → entries, where non-empty. */
export async function readDesiredRoutes(sql: postgres.Sql): Promise<Map<string, Map<string, Entry[]>>> {
  const rows = await sql<{ environmentId: string; backends: Entry[]; regions: string[] }[]>`
    SELECT environment_id AS "environmentId", backends, regions FROM environment_routes WHERE jsonb_array_length(backends) > 0`;
  const out = new Map<string, Map<string, Entry[]>>();
  for (const r of rows) for (const region of r.regions) (out.get(region) ?? out.set(region, new Map()).get(region)!).set(r.environmentId, r.backends.map((b) => ({ deploymentId: b.deploymentId, weight: b.weight })));
  return out;
}

/** A region's routes ConfigMaps (environment → entries with addresses) and its pods' Ready addresses. */
export async function readRoutes(simUrl: string): Promise<{ routes: Map<string, RoutedEntry[]>; ready: Map<string, string[]> }> {
  const [cms, pods] = await Promise.all([
    listItems(`${simUrl}/api/v1/namespaces/sentinel/configmaps?labelSelector=${encodeURIComponent(`${MANAGED},app.kubernetes.io/component=routes`)}`),
    listItems(`${simUrl}/api/v1/namespaces/unkey/pods?labelSelector=${encodeURIComponent(MANAGED)}`),
  ]);
  const routes = new Map<string, RoutedEntry[]>();
  for (const cm of cms) {
    const env = cm.metadata?.labels?.['unkey.com/environment.id'];
    if (!env || cm.metadata.deletionTimestamp) continue;
    routes.set(env, (JSON.parse(cm.data?.['routes.json'] ?? '{"backends":[]}') as { backends: RoutedEntry[] }).backends);
  }
  const ready = new Map<string, string[]>();
  for (const p of pods) {
    const id = p.metadata?.labels?.['unkey.com/deployment.id'];
    const isReady = p.status?.conditions?.some((c: { type: string; status: string }) => c.type === 'Ready' && c.status === 'True');
    if (!id || !isReady || p.metadata.deletionTimestamp) continue;
    ready.set(id, [...(ready.get(id) ?? []), `${p.metadata.name}.${p.spec?.subdomain}.${p.metadata.namespace}.svc.cluster.local`]);
  }
  return { routes, ready };
}

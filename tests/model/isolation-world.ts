// The real side of the isolation model (tests/model/isolation.test.ts): one in-process stack
// (ctrl, a kube-sim and a krane) shared by every sequence, and per sequence three workspaces made
// through the API: B1 (B alone), B2 (B beside A) and A. Each has a project, an environment and
// keys; B's key holds every permission a key can, A's keys are the sequence's (random
// permissions and scopes). The world runs calls as a given key, waits until B's workflows have
// settled, and retires a sequence's workspaces when it is done.
import { randomBytes } from 'node:crypto';
import { testStack, type TestStack } from '../helpers/stack';

export const REGION = 'us-east-1';
export const APEX = 'unkey.local';
/** Every permission a key may hold (rollouts.write is useless to a key: fleet-wide). */
export const KEY_PERMISSIONS = [
  'deployments.read', 'deployments.write', 'environments.write', 'traffic.write', 'sentinels.write', 'rollouts.write',
  'regions.read', 'invocations.read', 'invocations.write', 'audit.read', 'keys.write',
] as const;
/** A hung call fails the step (and names it) instead of stalling the run. */
const CALL_DEADLINE_MS = 20_000;
/** How long B's workflows may take to settle after a step, on a loaded machine: a generous net. */
export const SETTLE_MS = 60_000;

export interface Answer {
  status: number;
  body: any;
}

/** One workspace of a sequence: its ids, the namespace its given hostnames live under, its keys. */
export interface Tenant {
  label: 'B1' | 'B2' | 'A';
  workspaceId: string;
  projectId: string;
  environmentId: string;
  /** A DNS label unique to this tenant and sequence: B's given hostnames are `h<n>.<ns>.example`. */
  ns: string;
  /** Keys in creation order: [0] is the tenant's own (B: every permission; A: its first). */
  keys: { id: string; key: string }[];
}

export class World {
  private constructor(readonly stack: TestStack) {}

  static async start(): Promise<World> {
    // The rate limits are the caps test's (tests/e2e/tenancy-caps.test.ts): here B's reads must
    // never meet a 429 that one run sees and the other does not.
    const stack = await testStack({ regions: [REGION], readyDelayMs: 20, ctrl: { recheckMs: 300, settings: { keyRateLimit: 100_000, workspaceRateLimit: 0 } } });
    return new World(stack);
  }

  async call(path: string, init: { method?: string; body?: unknown; token?: string | null } = {}): Promise<Answer> {
    const headers: Record<string, string> = {};
    const token = init.token === undefined ? this.stack.adminToken : init.token;
    if (token) headers.authorization = `Bearer ${token}`;
    if (init.body !== undefined) headers['content-type'] = 'application/json';
    const r = await fetch(this.stack.ctrl.url + path, {
      method: init.method ?? (init.body !== undefined ? 'POST' : 'GET'),
      headers,
      ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
      signal: AbortSignal.timeout(CALL_DEADLINE_MS),
    });
    const text = await r.text();
    let body: unknown = null;
    try {
      body = text ? JSON.parse(text) : null;
    } catch {
      body = text;
    }
    return { status: r.status, body };
  }

  private async ok(what: string, a: Promise<Answer>, status = 201): Promise<any> {
    const r = await a;
    if (r.status !== status) throw new Error(`${what} answered ${r.status}: ${JSON.stringify(r.body)}`);
    return r.body;
  }

  /** A workspace with a project and an environment in REGION, made by the admin token. */
  async tenant(label: Tenant['label'], seq: number): Promise<Tenant> {
    const ns = `${label.toLowerCase()}-${seq}-${randomBytes(3).toString('hex')}`;
    const ws = await this.ok('workspace', this.call('/v1/workspaces', { body: { name: `tenant ${label[0]}` } }));
    const prj = await this.ok('project', this.call(`/v1/workspaces/${ws.id}/projects`, { body: { name: 'api' } }));
    const env = await this.ok('environment', this.call(`/v1/projects/${prj.id}/environments`, { body: { slug: 'production', regions: [REGION] } }));
    return { label, workspaceId: ws.id, projectId: prj.id, environmentId: env.id, ns, keys: [] };
  }

  /** A key of `t` made by the admin token, narrowed to `level`. */
  async key(t: Tenant, permissions: readonly string[], level: 'workspace' | 'project' | 'environment' = 'workspace'): Promise<{ id: string; key: string }> {
    const scope = { workspaceId: t.workspaceId, ...(level !== 'workspace' ? { projectId: t.projectId } : {}), ...(level === 'environment' ? { environmentId: t.environmentId } : {}) };
    const k = await this.ok('key', this.call('/v1/keys', { body: { name: `${t.label[0]} key`, scope, permissions } }));
    const made = { id: k.id as string, key: k.key as string };
    t.keys.push(made);
    return made;
  }

  /**
   * Waits until every workflow of the tenants' deployments and sentinels has ended and every
   * deployment's status agrees with its desired state: the state a step's observations are
   * compared in. Throws (naming what is open) past SETTLE_MS.
   */
  async settle(tenants: Tenant[]): Promise<void> {
    const ws = tenants.map((t) => t.workspaceId);
    const sql = this.stack.db.sql;
    const deadline = Date.now() + SETTLE_MS;
    for (;;) {
      const open = await sql<{ what: string }[]>`
        SELECT d.id || ' ' || d.status || '/' || d.desired_state AS what FROM deployments d
        WHERE d.workspace_id = ANY(${ws}::text[])
          AND (d.status IN ('pending', 'building', 'deploying', 'network')
               OR (d.desired_state = 'running' AND d.status = 'stopped')
               OR (d.desired_state = 'stopped' AND d.status = 'ready'))
        UNION ALL
        SELECT i.service || ' ' || i.object_key || ' ' || i.status FROM engine_invocations i
        WHERE i.status NOT IN ('completed', 'failed', 'cancelled')
          AND i.object_key IN (SELECT id FROM deployments WHERE workspace_id = ANY(${ws}::text[])
                               UNION ALL SELECT id FROM sentinels WHERE workspace_id = ANY(${ws}::text[]))`;
      if (open.length === 0) return;
      if (Date.now() > deadline) throw new Error(`not settled within ${SETTLE_MS} ms: ${open.map((o) => o.what).join(', ')}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  }

  /**
   * A finished sequence's workspaces go: their deployments stopped, then the workspaces deleted
   * (krane removes their sentinels and routes), so a long run does not carry every sequence's
   * objects. Best effort: what did not go is counted by the caller, never fatal.
   */
  async retire(tenants: Tenant[]): Promise<boolean> {
    const sql = this.stack.db.sql;
    const ws = tenants.map((t) => t.workspaceId);
    const deps = await sql<{ id: string }[]>`SELECT id FROM deployments WHERE workspace_id = ANY(${ws}::text[]) AND desired_state = 'running'`;
    for (const { id } of deps) await this.call(`/v1/deployments/${id}/stop`, { method: 'POST' }).catch(() => undefined);
    let all = true;
    for (const t of tenants) {
      let gone = false;
      for (const until = Date.now() + SETTLE_MS; !gone && Date.now() < until; await new Promise((r) => setTimeout(r, 200))) {
        const r = await this.call(`/v1/workspaces/${t.workspaceId}`, { method: 'DELETE' }).catch(() => undefined);
        gone = r?.status === 200 || r?.status === 404;
      }
      all &&= gone;
    }
    return all;
  }

  async close(): Promise<void> {
    await this.stack.close();
  }
}

// The live values of a completion (completion.ts says which): one GET to ctrl with the API the
// command line names (or the environment, or dev.json), bounded in time, and nothing on any
// failure: a tab press must never print an error into the user's command line.
import { ApiClient, resolveApiTarget, type Env } from './client';
import type { Candidate, Completion } from './completion';

/** A tab press waits at most this for the API; past it there are simply no live values. */
const LIVE_TIMEOUT_MS = 2_000;

async function values(client: ApiClient, live: NonNullable<Completion['live']>): Promise<Candidate[]> {
  const timeoutMs = LIVE_TIMEOUT_MS;
  switch (live.kind) {
    case 'regions':
      return (await client.get('/v1/regions', { timeoutMs })).map((r) => ({ value: r.name, description: r.status }));
    case 'deployments':
      return (await client.get('/v1/deployments', { query: { environmentId: live.environment }, timeoutMs })).deployments.map((d) => ({ value: d.id, description: `${d.version} ${d.status}` }));
    case 'invocations':
      return (await client.get('/v1/invocations', { timeoutMs })).invocations.map((i) => ({ value: i.id, description: `${i.service}/${i.handler} ${i.status}` }));
    case 'sentinels':
      return (await client.get('/v1/sentinels', { timeoutMs })).sentinels.map((s) => ({ value: s.id, description: `${s.environmentId} ${s.region}` }));
    case 'workspaces':
      return (await client.get('/v1/workspaces', { timeoutMs })).workspaces.map((w) => ({ value: w.id, description: w.name }));
    case 'keys':
      return (await client.get('/v1/keys', { timeoutMs })).keys.filter((k) => !k.revokedAt).map((k) => ({ value: k.id, description: k.name }));
  }
}

/** The completion with its live values added (those that start with what was typed). */
export async function withLiveValues(c: Completion, env: Env, cwd: string): Promise<Completion> {
  if (!c.live) return c;
  const live = c.live;
  let client: ApiClient | undefined;
  try {
    client = new ApiClient(await resolveApiTarget(live.target ?? {}, env, cwd));
    const found = (await values(client, live)).filter((v) => v.value.startsWith(live.partial)).map((v) => ({ ...v, value: live.prefix + v.value }));
    return { ...c, candidates: [...c.candidates, ...found] };
  } catch {
    // No API configured, unreachable, refused, too slow: complete what is known without it.
    return c;
  } finally {
    client?.close();
  }
}

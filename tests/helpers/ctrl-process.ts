// For tests that run ctrl as a process of the bundle (crash and restart tests): its admin API
// over fetch, and a region (kube-sim and krane, in this process) pointed at it, closed after
// the test.
import { after } from 'node:test';
import { loadConfig } from '../../src/config';
import { startKubeSim } from '../../src/modes/kube-sim';
import { startKrane } from '../../src/modes/krane';
import { cleanEnv } from './bundle';

/** The environment of a ctrl process that a test kills: silent, and with a short engine lease
 *  so the restarted process takes the dead one's invocations in about a second. */
export function killableCtrlEnv(o: { databaseUrl: string; adminToken: string; agentTokens: Record<string, string>; port: number }): NodeJS.ProcessEnv {
  return cleanEnv({
    UNKEY_INFRA_DATABASE_URL: o.databaseUrl,
    UNKEY_INFRA_ADMIN_TOKEN: o.adminToken,
    UNKEY_INFRA_AGENT_TOKENS: Object.entries(o.agentTokens).map(([r, t]) => `${r}=${t}`).join(','),
    UNKEY_INFRA_LISTEN: `127.0.0.1:${o.port}`,
    UNKEY_INFRA_ENGINE_LEASE: '1500ms',
    UNKEY_INFRA_LOG_LEVEL: 'silent',
  });
}

export type AdminApi = (path: string, body?: unknown) => Promise<{ status: number; body: any }>;

/** GET, or POST with a JSON body; answers with the status and the parsed body. */
export function adminApi(url: string, adminToken: string): AdminApi {
  return (path, body) =>
    fetch(url + path, {
      method: body ? 'POST' : 'GET',
      headers: { authorization: `Bearer ${adminToken}`, ...(body ? { 'content-type': 'application/json' } : {}) },
      ...(body ? { body: JSON.stringify(body) } : {}),
    }).then(async (r) => ({ status: r.status, body: (await r.json()) as any }));
}

/** A simulated cluster and its krane for `region`, reporting to ctrl at `url`; quick retries. */
export async function regionBeside(url: string, region: string, token: string, o: { readyDelayMs: number; leaderElect?: boolean }): Promise<void> {
  const sim = await startKubeSim(loadConfig('kubeSim', { port: 0, readyDelay: o.readyDelayMs, logLevel: 'silent' }, {}), { minReadyScale: 0.001 });
  const krane = await startKrane(
    loadConfig('krane', { region, controlPlane: url, token, listen: '127.0.0.1:0', logLevel: 'silent', ...(o.leaderElect === false ? { leaderElect: 'false' } : {}) }, {}),
    { kubeConfig: sim.sim.kubeConfig(), tuning: { minBackoffMs: 50, reporterRetryMs: 100, breakerResetMs: 500 } },
  );
  after(async () => {
    await krane.close();
    await sim.close();
  });
}

// Used by bench/feed.ts: the simulated agents (bench/_feed-agents.ts) in child processes, split
// over several (real agents each have a machine; one process for a thousand serialises their
// parsing after ctrl's writes), driven over IPC, their answers merged into one.
import { fork } from 'node:child_process';
import { join } from 'node:path';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export interface Agents {
  ready: { snapshotMs: number; failures: number };
  request<T>(type: string, reply: string): Promise<T>;
  stop(): Promise<void>;
}

/** What every child of one bench run shares. */
export interface FleetConfig {
  /** ctrl's (or the balancer's) URL. */
  url: string;
  tokens: Record<string, string>;
  /** Child processes the agents are split over. */
  processes: number;
  profileDir?: string;
}

/** One child process of simulated agents: agent j of it is agent offset + j of the fleet. */
async function startAgentProcess(cfg: FleetConfig, regions: string[], agents: number, offset: number, waitSeconds: number | undefined, handover: boolean): Promise<Agents> {
  const assigned = regions.map((region) => ({ region, token: cfg.tokens[region]! }));
  const child = fork(join(import.meta.dirname, '_feed-agents.ts'), [], { execArgv: ['--import', 'tsx'], stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  child.send({ type: 'config', config: { url: cfg.url, regions: assigned, agents, offset, waitSeconds, profileDir: cfg.profileDir, handover } });
  const next = (type: string) =>
    new Promise<any>((resolve, reject) => {
      const on = (m: any) => {
        if (m.type === type) {
          child.off('message', on);
          resolve(m);
        }
      };
      child.on('message', on);
      child.once('exit', (c) => reject(new Error(`agents exited with ${c}`)));
    });
  const ready = await next('ready');
  return {
    ready,
    async request(type, reply) {
      const p = next(reply);
      child.send({ type });
      return p;
    },
    async stop() {
      const exited = new Promise((r) => child.once('exit', r));
      child.send({ type: 'stop' });
      await Promise.race([exited, sleep(5_000)]);
      child.kill();
    },
  };
}

/** `agents` agents on `regions` (agent i on regions[i mod K]), split over cfg.processes children. */
/** `waitSeconds` undefined: the agents ask for krane's own wait (time to the next resync), which ctrl caps. */
export async function startAgents(cfg: FleetConfig, regions: string[], agents: number, waitSeconds: number | undefined, handover = true): Promise<Agents> {
  const procs = Math.min(cfg.processes, agents);
  const sizes = Array.from({ length: procs }, (_, k) => Math.floor(agents / procs) + (k < agents % procs ? 1 : 0));
  const offsets = sizes.map((_, k) => sizes.slice(0, k).reduce((a, b) => a + b, 0));
  const children = await Promise.all(sizes.map((n, k) => startAgentProcess(cfg, regions, n, offsets[k]!, waitSeconds, handover)));
  const merge = (answers: any[]): any => {
    const out: any = { ...answers[0] };
    for (const a of answers.slice(1)) {
      for (const [k, v] of Object.entries(a)) {
        if (typeof v === 'number') out[k] = k === 'snapshotMs' ? Math.max(out[k], v) : (out[k] ?? 0) + v;
        else if (v && typeof v === 'object' && k === 'seen') for (const [id, ts] of Object.entries(v as Record<string, number[]>)) (out.seen[id] ??= []).push(...ts);
        else if (v && typeof v === 'object') for (const [r, n] of Object.entries(v as Record<string, number>)) out[k][r] = (out[k][r] ?? 0) + n;
      }
    }
    return out;
  };
  return {
    ready: merge(children.map((c) => c.ready)),
    request: async (type, reply) => merge(await Promise.all(children.map((c) => c.request(type, reply)))),
    stop: async () => void (await Promise.all(children.map((c) => c.stop()))),
  };
}

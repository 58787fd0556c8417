// `unkey-infra dev` as a user runs it: the built bundle in a child process, in a directory of
// the test's own. The handle knows the process tree, so a test can check that Ctrl-C leaves
// nothing behind, and after() never leaves a PostgreSQL running when a test fails midway.
import { after } from 'node:test';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { cleanEnv, ensureBundle } from '../helpers/bundle';
import { until } from '../helpers/wait';

export interface DevRun {
  child: ChildProcess;
  stdout(): string;
  stderr(): string;
  /** From the banner. */
  apiUrl: string;
  adminToken: string;
  /** Sends a signal and resolves with the exit code (null and the signal if killed). */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** dev starts PostgreSQL (initdb on first start), ctrl, a simulator and a krane per region. */
const START_TIMEOUT_MS = 90_000;
/** A clean stop: feed, server, engine, PostgreSQL's fast shutdown. */
const STOP_TIMEOUT_MS = 30_000;

/** Pids of every live process below `pid`, read from /proc. */
export function descendants(pid: number): number[] {
  const parentOf = new Map<number, number>();
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    try {
      // Field 4 of /proc/PID/stat is the parent pid; the command name (field 2) may hold spaces.
      const stat = readFileSync(`/proc/${name}/stat`, 'utf8');
      parentOf.set(Number(name), Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]));
    } catch {
      // exited while we looked
    }
  }
  const out: number[] = [];
  const walk = (p: number) => {
    for (const [child, parent] of parentOf) if (parent === p) (out.push(child), walk(child));
  };
  walk(pid);
  return out;
}

export function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** The postmaster's pid, from postmaster.pid in PostgreSQL's data directory (absent when stopped). */
export function postmasterPid(pgDir: string): number | undefined {
  try {
    return Number(readFileSync(join(pgDir, 'postmaster.pid'), 'utf8').split('\n')[0]);
  } catch {
    return undefined;
  }
}

export async function startDev(args: string[], opts: { cwd: string; env?: NodeJS.ProcessEnv; bundle?: string }): Promise<DevRun> {
  const child = spawn(process.execPath, [opts.bundle ?? ensureBundle(), 'dev', ...args], {
    cwd: opts.cwd,
    env: opts.env ?? cleanEnv(),
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d) => (out += d));
  child.stderr!.on('data', (d) => (err += d));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((r) => child.once('exit', (code, signal) => r({ code, signal })));
  // Whatever happens in the test, nothing of this run outlives the file: a clean stop first,
  // then SIGKILL for the process and anything it started (PostgreSQL included).
  after(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const tree = descendants(child.pid!);
    child.kill('SIGINT');
    const t = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
    await exited;
    clearTimeout(t);
    for (const pid of tree) if (alive(pid)) process.kill(pid, 'SIGKILL');
  });
  const banner = await until(() => (child.exitCode !== null || child.signalCode !== null ? 'exited' : /unkey-infra dev is running[\s\S]*try: /.test(out) && out), START_TIMEOUT_MS, 'the dev banner', 50);
  if (banner === 'exited') throw new Error(`dev exited (${child.exitCode ?? child.signalCode}) before it was ready:\n${out}\n${err}`);
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    apiUrl: /API:\s+(\S+)/.exec(banner)![1]!,
    adminToken: /admin token:\s+(\S+)/.exec(banner)![1]!,
    async stop(signal = 'SIGINT') {
      child.kill(signal);
      return exited;
    },
  };
}

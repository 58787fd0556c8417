// The HA helpers' processes: each runs as the `postgres` user when we are root (PostgreSQL
// refuses root, and the others need no more), with its output in a log file, and is killed
// when this process exits, however it exits, so a failed test leaves nothing running.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chownSync, openSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';

export interface RunAs {
  uid: number;
  gid: number;
}

/** uid/gid to run as: `postgres` when we are root, else ourselves (undefined). */
export function runAs(): RunAs | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const id = (flag: string) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
  const uid = id('-u');
  if (!Number.isInteger(uid) || uid <= 0) throw new Error('running as root needs a `postgres` user (the postgresql package creates it)');
  return { uid, gid: id('-g') };
}

export function chownTree(path: string, who: RunAs | undefined): void {
  if (!who) return;
  chownSync(path, who.uid, who.gid);
  if (statSync(path).isDirectory()) for (const f of readdirSync(path)) chownTree(join(path, f), who);
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Polls `fn` until it returns a value; `ms` is a safety net, not the thing waited for. */
export async function waitFor<T>(what: string, ms: number, fn: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + ms;
  let last: unknown;
  for (let delay = 50; ; delay = Math.min(delay * 2, 500)) {
    try {
      const v = await fn();
      if (v !== undefined) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms${last ? ` (last error: ${(last as Error).message})` : ''}`);
    await sleep(delay);
  }
}

export function killPid(pid: number | undefined, signal: NodeJS.Signals = 'SIGKILL'): void {
  if (!pid) return;
  try {
    process.kill(pid, signal);
  } catch {
    // already gone
  }
}

/** One long-running process of ours, restartable (each start logs to a file of its own). */
export class Proc {
  child: ChildProcess | undefined;
  private starts = 0;
  private readonly onExit = () => killPid(this.child?.pid);

  constructor(
    readonly name: string,
    private readonly cmd: string,
    private readonly args: string[],
    private readonly logDir: string,
    private readonly who: RunAs | undefined,
    private readonly home: string,
  ) {}

  get running(): boolean {
    return !!this.child && this.child.exitCode === null && this.child.signalCode === null;
  }

  start(): void {
    if (this.running) return;
    this.starts++;
    const log = openSync(join(this.logDir, `${this.name}.${this.starts}.log`), 'a');
    this.child = spawn(this.cmd, this.args, {
      stdio: ['ignore', log, log],
      // Debian puts haproxy and pgbouncer in /usr/sbin, which a user's PATH may lack.
      env: { PATH: `${process.env.PATH ?? '/usr/bin:/bin'}:/usr/sbin:/sbin`, HOME: this.home, LANG: 'C.UTF-8' },
      ...(this.who ?? {}),
    });
    this.child.on('error', () => {});
    process.once('exit', this.onExit);
  }

  /** Sends `signal` and waits for the exit; SIGKILL after `graceMs` if it is still there. */
  async stop(signal: NodeJS.Signals = 'SIGTERM', graceMs = 20_000): Promise<void> {
    const c = this.child;
    process.off('exit', this.onExit);
    if (!c || !this.running) return;
    const exited = new Promise<void>((resolve) => c.once('exit', () => resolve()));
    c.kill(signal);
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([exited, new Promise<void>((r) => (timer = setTimeout(r, graceMs)))]);
    clearTimeout(timer);
    if (this.running) {
      c.kill('SIGKILL');
      await exited;
    }
  }
}

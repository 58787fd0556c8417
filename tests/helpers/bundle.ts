// The built single-file program. `npm test` builds it before running tests; a test file run on
// its own builds it when missing, so bundle tests never run a stale or absent file silently.
import { existsSync, readdirSync, statSync } from 'node:fs';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { join, resolve } from 'node:path';
import { until } from './wait';

export const ROOT = resolve(import.meta.dirname, '..', '..');
export const BUNDLE = join(ROOT, 'dist', 'unkey-infra.mjs');

function newestMtime(dir: string): number {
  let newest = 0;
  for (const e of readdirSync(dir, { withFileTypes: true })) {
    const p = join(dir, e.name);
    newest = Math.max(newest, e.isDirectory() ? newestMtime(p) : statSync(p).mtimeMs);
  }
  return newest;
}

/** Builds when the bundle is missing or older than any source or migration file. */
export function ensureBundle(): string {
  const stale = !existsSync(BUNDLE) || statSync(BUNDLE).mtimeMs < Math.max(newestMtime(join(ROOT, 'src')), newestMtime(join(ROOT, 'sql')));
  if (stale) execFileSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], { stdio: 'ignore' });
  return BUNDLE;
}

/** Environment for a child with no UNKEY_INFRA_* leaking in from the developer's shell. */
export function cleanEnv(extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('UNKEY_INFRA_')) env[k] = v;
  return { ...env, ...extra };
}

export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

export function runBundle(args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string; timeoutMs?: number } = {}): Promise<RunResult> {
  return new Promise((resolveRun, reject) => {
    const child = spawn(process.execPath, [ensureBundle(), ...args], { env: opts.env ?? cleanEnv(), cwd: opts.cwd ?? ROOT });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += d));
    child.stderr.on('data', (d) => (stderr += d));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`timed out: ${args.join(' ')}\nstdout: ${stdout}\nstderr: ${stderr}`));
    }, opts.timeoutMs ?? 20_000);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolveRun({ code, stdout, stderr });
    });
  });
}

export function spawnBundle(args: string[], opts: { env?: NodeJS.ProcessEnv; cwd?: string } = {}): ChildProcess {
  return spawn(process.execPath, [ensureBundle(), ...args], { env: opts.env ?? cleanEnv(), cwd: opts.cwd ?? ROOT, stdio: ['ignore', 'pipe', 'pipe'] });
}

/** Polls `url` until it answers with `status` (the one poller: fails at the safety net,
 *  with the last answer or error). `timeoutMs` only raises the net. */
export function waitForHttp(url: string, status = 200, timeoutMs?: number): Promise<Response> {
  return until(
    async () => {
      const r = await fetch(url);
      if (r.status !== status) throw new Error(`status ${r.status}`);
      return r;
    },
    { ms: timeoutMs, what: `${url} answering ${status}`, stepMs: 50 },
  );
}

/** A child's output lines, collected as they arrive (stdout; stderr too when asked): what a
 *  test reads a process's log lines from, and prints when it fails. */
export function outputLines(child: ChildProcess, o: { stderr?: boolean } = {}): string[] {
  const out: string[] = [];
  for (const stream of o.stderr ? [child.stdout!, child.stderr!] : [child.stdout!]) {
    let buf = '';
    stream.on('data', (d: Buffer) => {
      buf += d.toString();
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        out.push(buf.slice(0, i));
        buf = buf.slice(i + 1);
      }
    });
  }
  return out;
}

// The pluggable image builder. With a build context, the deploy workflow asks the configured
// builder for an image; with an image, nothing is built. The command builder runs an operator's
// shell command (e.g. `docker build -t "$UNKEY_IMAGE" . && echo "$UNKEY_IMAGE"`), so any
// toolchain (docker, buildkit, kaniko, depot) plugs in without code here.
//
// The command is the operator's, but the directory is the API caller's, so:
// - it runs only in a directory under the build root (--build-root), checked with symlinks
//   resolved when the API accepts the deployment and again right before the build;
// - it gets PATH, HOME and the three UNKEY_ variables, never ctrl's environment (the admin
//   token, the database URL with its password, agent tokens);
// - its output goes to ctrl's log (bounded), never into the deployment's public `error`, which
//   only says that the build failed and how it ended.
import { spawn } from 'node:child_process';
import { realpath, stat } from 'node:fs/promises';
import { isAbsolute, relative, resolve } from 'node:path';
import { AppError } from '../../errors';
import type { Logger } from '../../log';

export interface BuildRequest {
  deploymentId: string;
  buildContext: string;
}

export interface Builder {
  /** Resolves to the image reference to deploy. Rejects with a short reason on failure, and
   *  when `signal` aborts (an operator's abort of the canary being built) stops the build. */
  build(req: BuildRequest, opts?: { signal?: AbortSignal }): Promise<string>;
}

/** Output kept for the log from one build (its tail): enough for the failing step. */
const LOG_OUTPUT_BYTES = 16 * 1024;
/** The last stdout line names the image; a short tail of stdout is all that needs. */
const STDOUT_TAIL_BYTES = 4 * 1024;
/** A build that runs longer than this is stuck, not slow. */
const BUILD_TIMEOUT_MS = 30 * 60_000;

const imageRef = /^[a-z0-9][a-z0-9._\-/:@]*$/i;

const inside = (root: string, path: string) => {
  const rel = relative(root, path);
  return rel === '' || (!rel.startsWith('..') && !isAbsolute(rel));
};

/**
 * Where a build context really is: relative paths are taken from the root; the path must lie
 * under the root both as written and with every symlink resolved, and be a directory. Returns
 * the real path (what gets stored and built) or the problem.
 */
export async function resolveBuildContext(root: string, context: string): Promise<{ path: string } | { problem: string }> {
  const realRoot = await realpath(root).catch(() => undefined);
  if (!realRoot) return { problem: 'the build root (--build-root) does not exist on the control plane' };
  const written = isAbsolute(context) ? resolve(context) : resolve(realRoot, context);
  const outside = { problem: 'must be a directory inside the build root (--build-root)' };
  if (!inside(realRoot, written) && !inside(resolve(root), written)) return outside;
  const real = await realpath(written).catch(() => undefined);
  if (!real || !(await stat(real)).isDirectory()) return { problem: 'is not a directory inside the build root (--build-root)' };
  if (!inside(realRoot, real)) return outside; // a symlink leads out
  return { path: real };
}

export interface CommandBuilderOptions {
  command: string;
  /** --build-root: contexts are re-checked against it right before each build. */
  root: string;
  /** The variables the build may inherit from ctrl's environment: PATH and HOME. */
  env: { PATH?: string | undefined; HOME?: string | undefined };
  logger: Logger;
}

/** Appends to a string and keeps only its last `max` bytes (approximately: UTF-16 units). */
const tail = (s: string, add: string, max: number) => (s + add).slice(-max);

export function commandBuilder(o: CommandBuilderOptions): Builder {
  const log = o.logger;
  return {
    async build(req, opts = {}) {
      const where = await resolveBuildContext(o.root, req.buildContext);
      if ('problem' in where) throw new Error(`build context ${where.problem}`);
      const suggested = `unkey.local/${req.deploymentId}:latest`;
      const env: Record<string, string> = { UNKEY_BUILD_CONTEXT: where.path, UNKEY_DEPLOYMENT_ID: req.deploymentId, UNKEY_IMAGE: suggested };
      if (o.env.PATH) env.PATH = o.env.PATH;
      if (o.env.HOME) env.HOME = o.env.HOME;
      return new Promise((resolvePromise, reject) => {
        // An abort kills the shell (the build tool it runs goes with it unless it daemonises).
        const stop = opts.signal;
        const child = spawn('sh', ['-c', o.command], { cwd: where.path, env, stdio: ['ignore', 'pipe', 'pipe'], ...(stop ? { signal: stop, killSignal: 'SIGKILL' as const } : {}) });
        let output = '';
        let stdout = '';
        child.stdout.on('data', (d: Buffer) => {
          stdout = tail(stdout, String(d), STDOUT_TAIL_BYTES);
          output = tail(output, String(d), LOG_OUTPUT_BYTES);
        });
        child.stderr.on('data', (d: Buffer) => (output = tail(output, String(d), LOG_OUTPUT_BYTES)));
        let timedOut = false;
        const timer = setTimeout(() => {
          timedOut = true;
          child.kill('SIGKILL');
        }, BUILD_TIMEOUT_MS);
        child.on('error', (err) => {
          clearTimeout(timer);
          if (stop?.aborted) return reject(new AppError('ERR_BUILD_ABORTED', 'build stopped by an abort'));
          log.warn({ deploymentId: req.deploymentId, err: err.message }, 'build command could not start');
          reject(new Error('build command could not start'));
        });
        child.on('exit', (code, signal) => {
          clearTimeout(timer);
          if (stop?.aborted) return reject(new AppError('ERR_BUILD_ABORTED', 'build stopped by an abort'));
          if (code !== 0) {
            const how = timedOut ? `timed out after ${BUILD_TIMEOUT_MS / 60_000} minutes` : signal ? `killed by ${signal}` : `exit code ${code}`;
            log.warn({ deploymentId: req.deploymentId, exitCode: code, signal, output }, 'build failed');
            reject(new Error(`build failed (${how})`));
            return;
          }
          // The last stdout line names the image when it looks like one; else the suggested tag.
          const last = stdout.trim().split('\n').pop()?.trim() ?? '';
          const image = imageRef.test(last) ? last : suggested;
          log.info({ deploymentId: req.deploymentId, image }, 'build finished');
          resolvePromise(image);
        });
      });
    },
  };
}

/** Used when no build command is configured: a build context is then a user error. */
export const noBuilder: Builder = {
  build: async () => {
    throw new Error('this control plane has no build command configured (--build-command); deploy an image instead');
  },
};

// The pluggable image builder. With a build context, the deploy workflow asks the configured
// builder for an image; with an image, nothing is built. The command builder runs an operator's
// shell command (e.g. `docker build -t "$UNKEY_IMAGE" "$UNKEY_BUILD_CONTEXT" && echo "$UNKEY_IMAGE"`),
// so any toolchain (docker, buildkit, kaniko, depot) plugs in without code here.
import { spawn } from 'node:child_process';

export interface BuildRequest {
  deploymentId: string;
  buildContext: string;
}

export interface Builder {
  /** Resolves to the image reference to deploy. Rejects with a readable reason on failure. */
  build(req: BuildRequest): Promise<string>;
}

/** Longest build output kept for an error message: enough for the failing step, not the log. */
const ERROR_TAIL_CHARS = 2000;
/** A build that runs longer than this is stuck, not slow. */
const BUILD_TIMEOUT_MS = 30 * 60_000;

const imageRef = /^[a-z0-9][a-z0-9._\-/:@]*$/i;

export function commandBuilder(command: string): Builder {
  return {
    build: (req) =>
      new Promise((resolve, reject) => {
        const suggested = `unkey.local/${req.deploymentId}:latest`;
        const child = spawn('sh', ['-c', command], {
          cwd: req.buildContext,
          env: { ...process.env, UNKEY_BUILD_CONTEXT: req.buildContext, UNKEY_DEPLOYMENT_ID: req.deploymentId, UNKEY_IMAGE: suggested },
          stdio: ['ignore', 'pipe', 'pipe'],
        });
        let out = '';
        let err = '';
        child.stdout.on('data', (d) => (out = (out + d).slice(-ERROR_TAIL_CHARS)));
        child.stderr.on('data', (d) => (err = (err + d).slice(-ERROR_TAIL_CHARS)));
        const timer = setTimeout(() => child.kill('SIGKILL'), BUILD_TIMEOUT_MS);
        child.on('error', (e) => {
          clearTimeout(timer);
          reject(new Error(`build command could not start: ${e.message}`));
        });
        child.on('exit', (code, signal) => {
          clearTimeout(timer);
          if (code !== 0) {
            reject(new Error(`build failed (${signal ?? `exit ${code}`}): ${(err || out).trim().split('\n').slice(-5).join(' | ')}`));
            return;
          }
          // The last stdout line names the image when it looks like one; else the suggested tag.
          const last = out.trim().split('\n').pop()?.trim() ?? '';
          resolve(imageRef.test(last) ? last : suggested);
        });
      }),
  };
}

/** Used when no build command is configured: a build context is then a user error. */
export const noBuilder: Builder = {
  build: async () => {
    throw new Error('this control plane has no build command configured (--build-command); deploy an image instead');
  },
};

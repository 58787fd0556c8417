// `--wait` for deploy and rollback: follows the deployment (src/cli/watch.ts), shows progress,
// and turns the outcome into an exit code: 0 ready, 1 failed or stopped, 3 unknown (timed out
// or lost ctrl; the deployment carries on server-side either way).
import type { ApiClient } from '../client';
import { ApiError, CliError, EXIT_FAILED, EXIT_OK, EXIT_UNKNOWN } from '../errors';
import type { Io } from '../io';
import type { ProgressState } from '../progress';
import { duration, progressLines } from '../render';
import { DEFAULT_WATCH, watchDeployment } from '../watch';
import type { CommandContext } from './context';

/** Terminal: redraw the block in place. Otherwise: append only the lines that changed. */
export function progressPrinter(io: Io, elapsed: () => number): (s: ProgressState) => void {
  let drawn = 0;
  const printed = new Map<string, string>();
  return (s) => {
    if (io.isTTY) {
      const lines = progressLines(s, { withBars: true, elapsedMs: elapsed() }).map((l) => l.slice(0, Math.max(20, io.columns - 1)));
      // ESC[nF moves to the start of the line n lines up, ESC[J clears from there down.
      if (drawn) io.control(`\x1b[${drawn}F\x1b[J`);
      io.out(`${lines.join('\n')}\n`);
      drawn = lines.length;
      return;
    }
    const lines = progressLines(s, { withBars: false });
    const keys = ['', ...s.regions.map((r) => r.region)];
    const stamp = `[${duration(elapsed()).padStart(6)}]`;
    lines.forEach((line, i) => {
      const key = keys[i]!;
      if (printed.get(key) === line) return;
      printed.set(key, line);
      io.out(`${stamp} ${line}\n`);
    });
  };
}

/** Said once on stderr when live events stop, so slower, stepwise progress has an explanation. */
export function fallbackNotice(reason: string, pollMs: number): string {
  return `unkey-infra: live events unavailable (${reason}); following by polling every ${duration(pollMs)}\n`;
}

/** The short cause of a lost connection (ECONNREFUSED, HTTP 503), without repeating the URL. */
function causeOf(err: unknown): string {
  if (err instanceof ApiError) return `HTTP ${err.status} ${err.apiCode}`;
  const cause = (err as { cause?: { code?: string; message?: string } } | undefined)?.cause;
  return cause?.code ?? cause?.message ?? (err instanceof Error ? err.message : String(err));
}

export async function followDeployment(ctx: CommandContext, client: ApiClient, id: string, opts: { json: boolean; timeoutMs?: number | undefined }): Promise<number> {
  const started = ctx.now();
  const elapsed = () => ctx.now() - started;
  const show = opts.json ? () => {} : progressPrinter(ctx.io, elapsed);
  const options = { ...ctx.watch, ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}) };
  const pollMs = options.pollMs ?? DEFAULT_WATCH.pollMs;
  const r = await watchDeployment(client, id, options, show, (reason) => ctx.io.err(fallbackNotice(reason, pollMs)));
  if (r.outcome === 'error') throw r.error;
  if (opts.json && r.deployment) ctx.io.out(`${JSON.stringify(r.deployment, null, 2)}\n`);
  const status = r.deployment?.status ?? r.state?.status ?? 'unknown';
  // The trace shows where the time went (or what failed) in the tracing backend.
  const traceId = r.deployment?.traceId ?? null;
  switch (r.outcome) {
    case 'ready': {
      if (!opts.json) {
        const domains = r.deployment?.domains.map((d) => d.hostname) ?? [];
        const lines = [`deployment ${id} is ready after ${duration(elapsed())}`, ...(domains.length ? [`  domains: ${domains.join(', ')}`] : []), ...(traceId ? [`  trace: ${traceId}`] : [])];
        ctx.io.out(`${lines.join('\n')}\n`);
      }
      return EXIT_OK;
    }
    case 'failed':
      throw new CliError('ERR_CLI_DEPLOY_FAILED', `deployment ${id} ${status === 'rolled_back' ? 'was rolled back' : 'failed'}: ${r.deployment?.error ?? r.state?.error ?? 'no reason given'}`, {
        hints: [`details: unkey-infra deployments get ${id}`, ...(traceId ? [`trace: ${traceId}`] : [])],
      });
    case 'stopped':
      throw new CliError('ERR_CLI_DEPLOY_STOPPED', `deployment ${id} ended ${status} before it became ready`, { exitCode: EXIT_FAILED });
    case 'timeout':
      throw new CliError('ERR_CLI_WAIT_TIMEOUT', `gave up waiting after ${duration(elapsed())}: deployment ${id} is still ${status}`, {
        exitCode: EXIT_UNKNOWN,
        hints: ['it continues on the server; follow it with', `unkey-infra deployments get ${id}`],
      });
    default:
      throw new CliError(
        'ERR_CLI_CTRL_LOST',
        `lost contact with ctrl at ${client.target.url} (${causeOf(r.error)}) while deployment ${id} was ${status}`,
        { exitCode: EXIT_UNKNOWN, hints: ['the deployment may still complete; check later with', `unkey-infra deployments get ${id}`] },
      );
  }
}

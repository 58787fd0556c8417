// Errors of the client commands and the exit codes they map to. Every failure a user can meet
// (no API configured, ctrl unreachable, an API error, a failed deploy) is a CliError with a
// code and an exit code, so the commander wiring prints one readable message instead of a stack.

/** Exit codes: 0 ok; 1 the operation failed (API error, deploy failed); 2 invalid usage or
 * configuration (same as the server modes); 3 outcome unknown (timed out waiting, lost ctrl),
 * so scripts can tell "it failed" from "go and look". */
export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;
export const EXIT_UNKNOWN = 3;

export class CliError extends Error {
  readonly code: string;
  readonly exitCode: number;
  /** Extra lines printed under the message: what to do next. */
  readonly hints: string[];

  constructor(code: string, message: string, opts: { exitCode?: number; hints?: string[]; cause?: unknown } = {}) {
    super(message, opts.cause === undefined ? undefined : { cause: opts.cause });
    this.name = 'CliError';
    this.code = code;
    this.exitCode = opts.exitCode ?? EXIT_FAILED;
    this.hints = opts.hints ?? [];
  }
}

export interface ApiErrorDetail {
  field: string;
  message: string;
}

/** A non-2xx answer from ctrl, with the `{ error: { code, message, details } }` body it sent. */
export class ApiError extends CliError {
  readonly status: number;
  readonly apiCode: string;
  readonly details: ApiErrorDetail[];

  constructor(status: number, apiCode: string, message: string, details: ApiErrorDetail[]) {
    super('ERR_CLI_API', message, { exitCode: EXIT_FAILED });
    this.name = 'ApiError';
    this.status = status;
    this.apiCode = apiCode;
    this.details = details;
  }
}

export const usageError = (message: string, hints: string[] = []) => new CliError('ERR_CLI_USAGE', message, { exitCode: EXIT_USAGE, hints });

/**
 * The text printed for an error, one line per detail. `flagFor` maps an API field name to the
 * flag the user typed (`cpuMillicores` → `--cpu`), so a 400 points at the command line.
 */
export function formatError(err: unknown, flagFor: (field: string) => string | undefined = () => undefined): string {
  if (err instanceof ApiError) {
    const lines = [`unkey-infra: ${err.message} (HTTP ${err.status} ${err.apiCode})`];
    for (const d of err.details) {
      const flag = flagFor(d.field);
      lines.push(`  ${d.field}${flag ? ` (${flag})` : ''}: ${d.message}`);
    }
    return `${lines.join('\n')}\n`;
  }
  if (err instanceof CliError) {
    return `${[`unkey-infra: ${err.message}`, ...err.hints.map((h) => `  ${h}`)].join('\n')}\n`;
  }
  return `unkey-infra: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`;
}

export function exitCodeOf(err: unknown): number {
  return err instanceof CliError ? err.exitCode : EXIT_FAILED;
}

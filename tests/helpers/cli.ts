// Two ways to run the client commands. runCli: in-process through commander with the commands
// registered exactly as main.ts registers them (registerClientCommands), output captured and
// the exit code the command sets returned; fast, and lets tests shorten the --wait timings.
// Commander's own refusals (unknown flag, bad value) are main.ts's to turn into an exit code,
// so runCli does not guess one: it throws, and such cases are tested with runProgram, which
// runs the built program (dist/unkey-infra.mjs) as a process and returns its real exit code.
import { Command, CommanderError } from 'commander';
import { memoryIo, registerClientCommands, type ClientCommandDeps, type Io } from '../../src/cli';
import { cleanEnv, runBundle } from './bundle';

export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export async function runCli(
  argv: string[],
  deps: Omit<ClientCommandDeps, 'io' | 'setExitCode'> & { io?: Io & { stdout(): string; stderr(): string } } = {},
): Promise<CliRun> {
  const io = deps.io ?? memoryIo();
  let code: number | undefined;
  const program = new Command('unkey-infra').exitOverride().enablePositionalOptions().configureOutput({ writeErr: (s) => io.err(s), writeOut: (s) => io.out(s) });
  registerClientCommands(program, { ...deps, io, env: deps.env ?? {}, setExitCode: (c) => (code = c) });
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (err) {
    if (!(err instanceof CommanderError)) throw err;
    throw new Error(`commander refused \`${argv.join(' ')}\` (${err.code}): test usage errors with runProgram, which runs the real program\n${io.stderr()}`);
  }
  if (code === undefined) throw new Error(`\`${argv.join(' ')}\` ran no command`);
  return { code, stdout: io.stdout(), stderr: io.stderr() };
}

/** The built program as a process: main.ts's own wiring and exit codes. env replaces UNKEY_INFRA_* of the shell. */
export async function runProgram(argv: string[], opts: { env?: Record<string, string>; cwd?: string; timeoutMs?: number } = {}): Promise<CliRun> {
  const r = await runBundle(argv, { env: cleanEnv(opts.env), ...(opts.cwd ? { cwd: opts.cwd } : {}), ...(opts.timeoutMs ? { timeoutMs: opts.timeoutMs } : {}) });
  if (r.code === null) throw new Error(`\`${argv.join(' ')}\` died by a signal\n${r.stderr}`);
  return { code: r.code, stdout: r.stdout, stderr: r.stderr };
}

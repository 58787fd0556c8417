// Runs client commands through commander exactly as main.ts wires them, with output captured
// and the exit code returned instead of set on the process.
import { Command, CommanderError } from 'commander';
import { memoryIo, registerClientCommands, type ClientCommandDeps, type Io } from '../../src/cli';

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
  let code = -1;
  const program = new Command('unkey-infra').exitOverride().enablePositionalOptions().configureOutput({ writeErr: (s) => io.err(s), writeOut: (s) => io.out(s) });
  registerClientCommands(program, { ...deps, io, env: deps.env ?? {}, setExitCode: (c) => (code = c) });
  try {
    await program.parseAsync(argv, { from: 'user' });
  } catch (err) {
    if (!(err instanceof CommanderError)) throw err;
    code = err.exitCode === 0 ? 0 : 2;
  }
  return { code, stdout: io.stdout(), stderr: io.stderr() };
}

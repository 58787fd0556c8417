// `unkey-infra completion bash|zsh|fish` prints the shell's script; the hidden `__complete LINE`
// is what those scripts call on each tab press. Registered last, on the program itself, so the
// walk of completion.ts sees every command main.ts and the client registered.
import type { Command } from 'commander';
import { complete, formatCompletion } from './completion';
import { withLiveValues } from './completion-live';
import { COMPLETION_SCRIPTS, SHELLS, type Shell } from './completion-scripts';
import type { Env } from './client';
import { EXIT_OK, EXIT_USAGE } from './errors';
import type { Io } from './io';

export function registerCompletion(program: Command, deps: { io: () => Io; env: Env; cwd: string; setExitCode(code: number): void }): void {
  program
    .command('completion')
    .argument('<shell>', SHELLS.join(', '))
    .description('print a shell completion script: commands, flags and live values (regions, ids) from the API; e.g. source <(unkey-infra completion bash)')
    .action((shell: string) => {
      const io = deps.io();
      if (!(SHELLS as readonly string[]).includes(shell)) {
        io.err(`unkey-infra: completion is for ${SHELLS.join(', ')}, not "${shell}"\n`);
        return deps.setExitCode(EXIT_USAGE);
      }
      io.out(COMPLETION_SCRIPTS[shell as Shell]);
      deps.setExitCode(EXIT_OK);
    });
  program
    .command('__complete', { hidden: true })
    .argument('<line>', 'the command line up to the cursor')
    .helpOption(false)
    .action(async (line: string) => {
      deps.io().out(formatCompletion(await withLiveValues(complete(program, line), deps.env, deps.cwd)));
      deps.setExitCode(EXIT_OK);
    });
}

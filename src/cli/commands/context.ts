// What every command receives: output, the environment to resolve the API from, a clock, and
// a client factory. The commander wiring builds one per run and closes its client afterwards.
import { ApiClient, resolveApiTarget, type ClientFlags, type Env } from '../client';
import { printableIo, type Io } from '../io';
import type { WatchOptions } from '../watch';

export interface CommandContext {
  io: Io;
  env: Env;
  cwd: string;
  now(): number;
  /** Overrides of the `--wait` timings (tests shorten them). */
  watch: Partial<WatchOptions>;
  /** Aborted when the user interrupts (Ctrl-C): a `--watch` that runs until then returns. */
  signal: AbortSignal;
  /** Resolves the API from flags, environment and dev.json; one client per run. */
  client(flags: ClientFlags): Promise<ApiClient>;
}

export interface ContextDeps {
  io: Io;
  env?: Env;
  cwd?: string;
  now?: () => number;
  watch?: Partial<WatchOptions>;
  signal?: AbortSignal;
}

export function createContext(deps: ContextDeps): CommandContext & { close(): void } {
  let client: ApiClient | undefined;
  return {
    io: printableIo(deps.io),
    env: deps.env ?? {},
    cwd: deps.cwd ?? process.cwd(),
    now: deps.now ?? Date.now,
    watch: deps.watch ?? {},
    signal: deps.signal ?? new AbortController().signal,
    async client(flags) {
      client ??= new ApiClient(await resolveApiTarget(flags, deps.env ?? {}, deps.cwd ?? process.cwd()));
      return client;
    },
    close() {
      client?.close();
    },
  };
}

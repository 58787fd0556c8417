// The client side of unkey-infra: commands that talk to ctrl's public HTTP API (deploy,
// deployments, sentinels, invocations) and show live progress. Nothing here touches the
// database; everything goes through /v1 with the admin token.
//
// Layout:
//   client.ts    where the API is (flag → UNKEY_INFRA_* env → <data-dir>/dev.json of
//                `unkey-infra dev`) and the HTTP/WebSocket client; API errors become ApiError
//   retry.ts     which failures a call is sent again for (ctrl or its database away for a
//                moment, e.g. a failover) and when; creates carry an Idempotency-Key so a
//                repeat answers with the first call's deployment
//   errors.ts    CliError/ApiError, exit codes (0 ok, 1 failed, 2 usage, 3 unknown), formatting
//   commands/    one module per command group: (options, context) → exit code, no commander;
//                commands/list.ts prints (or watches) any list the same way
//   watch.ts     follows a deployment: WebSocket events drive it, a periodic GET backs it up
//   live.ts      one event socket: greeting deadline, one listener per kind, lost said once
//   progress.ts  pure fold of snapshots and events into per-region progress
//   render.ts    pure text: tables, detail views, progress lines
//   output.ts    -o table|wide|json|yaml of list commands, kubectl's AGE and READY x/y
//   columns.ts   every list's columns (default and -o wide), pure
//   list-watch.ts  `--watch` on a list: the list, then each row again as it changes, until Ctrl-C
//   completion.ts  what completes on a command line, from the program's commander tree
//   completion-live.ts  its live values (regions, ids), one bounded GET
//   completion-scripts.ts  the bash, zsh and fish scripts of `unkey-infra completion`
//   register-completion.ts  `completion SHELL` and the hidden `__complete LINE`
//   register.ts  commander wiring: registerClientCommands(program, { env: process.env })
//   register-tenancy.ts  the same for workspaces, projects, environments, keys and audit
//   options.ts   flag value parsers (form only; ranges are the API's 400 to report)
//   io.ts        output sinks: the process's streams, or memory for tests; printableIo, which
//                every command writes through, shows others' control characters as text
//   api.gen.ts   GENERATED (scripts/gen-api-types.ts) from ctrl's OpenAPI document: every route's
//                parameters, bodies and answers, and a type per answer (DeploymentDetail, …)
//   api-paths.ts those routes as call shapes: ApiClient.get/post/put/delete take a documented
//                path template and return its answer's type
//   dev-file.ts  dev.json's name and shape (`unkey-infra dev` writes it, client.ts reads it)
//
// Imports: the client talks to ctrl over HTTP only, so it imports none of the server's parts
// (no modes, http, store, sync, workflow or kube code). Outside this folder it may import
// ../config (flag and environment names, duration parsing, the dev data-dir default) and, as a
// type only, the LiveEvent union of ../live-events (the JSON the event socket sends; erased at
// build). src/modes/dev.ts imports dev-file.ts, never the other way round.
//
// Concurrency: one command per process run, one client per command; `--wait` holds one socket
// and at most one GET in flight; a list's READY column reads at most four details at once.
// Commands set process.exitCode rather than calling exit, and close their sockets and timers,
// so the process ends when the work does; a `--watch` runs until SIGINT/SIGTERM (ctx.signal).
//
// Use: main.ts calls registerClientCommands(program, { env: process.env }); tests pass memoryIo()
// and a small watch.pollMs, or call the command functions with createContext().
export { registerClientCommands, type ClientCommandDeps } from './register';
export { ApiClient, resolveApiTarget, DEFAULT_DATA_DIR, type ApiTarget, type ClientFlags, type Env } from './client';
export { ApiError, CliError, EXIT_FAILED, EXIT_OK, EXIT_UNKNOWN, EXIT_USAGE, formatError } from './errors';
export { memoryIo, processIo, type Io } from './io';
export { watchDeployment, DEFAULT_WATCH, type WatchOptions, type WatchResult } from './watch';
export { applyEvent, fromDeployment, mergeSnapshot, TERMINAL_STATUSES, type ProgressState, type RegionState } from './progress';
export type * from './api.gen';
export type { LiveEvent } from '../live-events';
export * from './render';
export * from './commands';

// The client commands as plain async functions: (options, context) → exit code. They know
// nothing of commander (src/cli/register.ts maps flags onto them), so tests call them directly
// with captured output. Human output goes through src/cli/render.ts; --json prints the API's
// answer unchanged. Failures are thrown as CliError/ApiError and printed by the caller. Every
// list command prints (or, with --watch, follows) its rows through list.ts.
export * from './context';
export * from './deploy';
export * from './deployments';
export * from './follow';
export * from './invocations';
export * from './sentinels';
export * from './rollout';
export * from './versions';

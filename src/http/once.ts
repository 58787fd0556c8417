// A start shared by every caller that runs once, and again after it failed: the agent-token and
// API-key caches start listening for revocations on first use, and a database that was away at
// that moment must not leave them without a listener for good.
export function onceUntilFailed(fn: () => Promise<void>): () => Promise<void> {
  let running: Promise<void> | undefined;
  return () =>
    (running ??= fn().catch((err: unknown) => {
      running = undefined;
      throw err;
    }));
}

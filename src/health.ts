// The shape of a readiness check, shared by every part that can tell whether it is ready (the
// database, the engine, the change feed). The HTTP probes in src/http/health.ts run them; the
// parts themselves know nothing of HTTP.

export interface ReadinessCheck {
  name: string;
  /** Resolves to null when ready, or a reason. Throwing counts as not ready. */
  check: () => Promise<string | null>;
}

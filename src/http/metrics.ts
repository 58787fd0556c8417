// Prometheus metrics. One registry per process (not the global default), so tests can build
// several apps in one process without "metric already registered" errors.
import client from 'prom-client';
import type { FastifyInstance } from 'fastify';

export type Registry = client.Registry;

export function createRegistry(defaultLabels: Record<string, string> = {}): Registry {
  const registry = new client.Registry();
  registry.setDefaultLabels(defaultLabels);
  client.collectDefaultMetrics({ register: registry });
  // prom-client also exports these sums as gauges named `_total`, which Prometheus reserves for
  // counters (promtool check metrics rejects them); the same numbers stay available per type in
  // nodejs_active_handles, nodejs_active_requests and nodejs_active_resources.
  for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) registry.removeSingleMetric(name);
  return registry;
}

/** Request counts and durations by route pattern (not raw URL, which would explode cardinality). */
export function instrumentHttp(app: FastifyInstance, registry: Registry): void {
  const duration = new client.Histogram({
    name: 'http_request_duration_seconds',
    help: 'HTTP request duration by method, route and status',
    labelNames: ['method', 'route', 'status'],
    buckets: [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 30],
    registers: [registry],
  });
  app.addHook('onResponse', async (req, reply) => {
    duration.observe(
      { method: req.method, route: req.routeOptions.url ?? 'unmatched', status: String(reply.statusCode) },
      reply.elapsedTime / 1000,
    );
  });
}

export function metricsRoute(app: FastifyInstance, registry: Registry): void {
  app.get('/metrics', async (_req, reply) => {
    void reply.header('content-type', registry.contentType);
    return registry.metrics();
  });
}

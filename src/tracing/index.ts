// Tracing: OpenTelemetry spans exported over OTLP/HTTP (`--otlp-endpoint`, or the standard
// OTEL_EXPORTER_OTLP_ENDPOINT read by src/config.ts). A leaf part: it imports only the kernel
// and @opentelemetry/*, and every part may use it; the engine does not import it but receives
// engineTraceHooks as an option, so it stores an opaque carrier and knows nothing of spans.
//
// Off by default, and then free: nothing is registered, every helper returns after one null
// check, the engine stores no carrier, the outbox writes no traceparent.
//
// - provider.ts: startTracing (one provider per process; BatchSpanProcessor + OTLP exporter, or
//   a test's exporter with SimpleSpanProcessor), ids that a durable span can preset.
// - spans.ts: withSpan (a span around work; an error is recorded on the span that failed),
//   traceparent strings (currentTraceparent, parseTraceparent, traceIdOf, contextOf).
// - durable.ts: spans of workflow invocations (planSpan, annotate, fail, engineTraceHooks):
//   ids planned at the start, stored with the invocation, emitted once at its end, so a
//   resumed workflow (after a crash, on another replica) continues the same trace.
//
// Names (seed 001): deployment.workflow, deployment.build, deployment.topology.create,
// deployment.events.emit, deployment.status.poll; krane's deployment.apply.<region> (and
// sentinel.apply.<region>, cilium.apply.<region>); sentinel.deploy; rollout.wave.
// Attributes: deployment.id, environment.id, deployment.regions, region, sentinel.id.
//
// Use
//   const tracing = startTracing({ serviceName: 'ctrl', endpoint: cfg.otlpEndpoint });
//   await withSpan('deployment.build', { attributes: { 'deployment.id': id } }, () => build());
//   planSpan('deployment.workflow', attrs, () => engine.send(...));   // in a handler: annotate/fail
//   on SIGTERM: await tracing.shutdown() (flushes the batch).
export { startTracing, tracesUrl } from './provider';
export type { TracingHandle, TracingOptions } from './provider';
export { withSpan, recordError, failActiveSpan, currentTraceparent, parseTraceparent, traceIdOf, contextOf, formatTraceparent, tracingEnabled } from './spans';
export type { SpanOptions } from './spans';
export { planSpan, annotate, fail, engineTraceHooks } from './durable';

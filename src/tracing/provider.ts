// The process's one tracer provider. Nothing is registered until startTracing runs, so with
// tracing off the OpenTelemetry API stays on its no-op defaults and every helper in this part
// returns after one null check.
import { context, trace, type Tracer } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  BatchSpanProcessor,
  RandomIdGenerator,
  SimpleSpanProcessor,
  type IdGenerator,
  type SpanExporter,
} from '@opentelemetry/sdk-trace-base';

/**
 * Ids come from here. A durable span (one whose ids were chosen when its workflow started and
 * stored with the invocation) is emitted later, possibly by another process, under the ids its
 * children already point at: `preset` makes the next startSpan use them. startSpan is
 * synchronous, so nothing else can take them in between.
 */
class PresettableIds implements IdGenerator {
  readonly #random = new RandomIdGenerator();
  preset: { traceId: string; spanId: string } | null = null;
  generateTraceId(): string {
    return this.preset?.traceId ?? this.#random.generateTraceId();
  }
  generateSpanId(): string {
    return this.preset?.spanId ?? this.#random.generateSpanId();
  }
}

interface Active {
  tracer: Tracer;
  ids: PresettableIds;
  provider: BasicTracerProvider;
  contextManager: AsyncLocalStorageContextManager;
}

let active: Active | null = null;

/** The tracer, or null when tracing is off (the zero-cost path every helper takes first). */
export function activeTracer(): Active | null {
  return active;
}

export interface TracingOptions {
  /** `service.name` of the spans (ctrl, krane, dev). */
  serviceName: string;
  /** OTLP/HTTP base URL (`/v1/traces` is appended unless present). */
  endpoint?: string | undefined;
  /** Tests: an exporter (e.g. InMemorySpanExporter), each span exported when it ends. */
  exporter?: SpanExporter;
}

export interface TracingHandle {
  /** Exports what is buffered (a clean shutdown must not lose the last spans). */
  flush(): Promise<void>;
  shutdown(): Promise<void>;
}

const NOOP: TracingHandle = { flush: async () => {}, shutdown: async () => {} };

/** OTLP/HTTP convention: the signal path goes after the base URL the operator gives. */
export function tracesUrl(endpoint: string): string {
  const base = endpoint.replace(/\/+$/, '');
  return base.endsWith('/v1/traces') ? base : `${base}/v1/traces`;
}

/**
 * Registers the provider for this process. Without an endpoint or exporter it does nothing (off).
 * A second start in one process (dev runs ctrl and krane together) shares the first provider.
 */
export function startTracing(opts: TracingOptions): TracingHandle {
  if (!opts.endpoint && !opts.exporter) return NOOP;
  if (active) return NOOP;
  // 3 s per export, not the default 10: a request to a dead collector outlives a bounded
  // shutdown and holds the process open until it times out.
  const exporter = opts.exporter ?? new OTLPTraceExporter({ url: tracesUrl(opts.endpoint!), timeoutMillis: 3_000 });
  const processor = opts.exporter ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(exporter);
  const ids = new PresettableIds();
  const provider = new BasicTracerProvider({
    resource: resourceFromAttributes({ 'service.name': opts.serviceName }),
    idGenerator: ids,
    spanProcessors: [processor],
  });
  const contextManager = new AsyncLocalStorageContextManager().enable();
  context.setGlobalContextManager(contextManager);
  trace.setGlobalTracerProvider(provider);
  const mine: Active = { tracer: provider.getTracer('unkey-infra'), ids, provider, contextManager };
  active = mine;
  return {
    flush: () => bounded(provider.forceFlush(), 'flush'),
    shutdown: async () => {
      if (active !== mine) return;
      active = null;
      await bounded(provider.shutdown(), 'shutdown');
      trace.disable();
      context.disable();
    },
  };
}

/**
 * The last export on shutdown gets this long. A collector that is down must neither fail a
 * clean shutdown (it would replace the real exit reason) nor eat into the pod's termination
 * grace (the exporter's own timeout is 10 s, the batch processor's 30 s): the spans are lost,
 * and said so on stderr, which is the one output still certain to exist at this point.
 */
const SHUTDOWN_EXPORT_MS = 2_000;

async function bounded(p: Promise<void>, what: string): Promise<void> {
  let t: NodeJS.Timeout | undefined;
  const late = new Promise<string>((resolve) => {
    t = setTimeout(() => resolve(`took longer than ${SHUTDOWN_EXPORT_MS} ms`), SHUTDOWN_EXPORT_MS);
    t.unref();
  });
  const problem = await Promise.race([p.then(() => null, (err: unknown) => String((err as Error)?.message ?? err)), late]);
  clearTimeout(t);
  if (problem) process.stderr.write(`unkey-infra: trace export on ${what} failed (${problem}); buffered spans are dropped\n`);
}

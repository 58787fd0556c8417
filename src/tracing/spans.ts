// Spans of ordinary (non-durable) work and the W3C traceparent strings that carry a context
// across process boundaries (the outbox row, the NDJSON change line, a status report).
import { context, isSpanContextValid, SpanStatusCode, trace, TraceFlags, ROOT_CONTEXT, type Attributes, type Context, type Link, type Span, type SpanContext } from '@opentelemetry/api';
import { activeTracer } from './provider';

const TRACEPARENT = /^00-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;

export function formatTraceparent(sc: SpanContext): string {
  return `00-${sc.traceId}-${sc.spanId}-${sc.traceFlags & TraceFlags.SAMPLED ? '01' : '00'}`;
}

/** The span context a traceparent names, or null when it is absent or malformed (never throws:
 *  it arrives from the database and the network). */
export function parseTraceparent(tp: string | null | undefined): SpanContext | null {
  const m = tp ? TRACEPARENT.exec(tp) : null;
  if (!m) return null;
  const sc: SpanContext = { traceId: m[1]!, spanId: m[2]!, traceFlags: parseInt(m[3]!, 16), isRemote: true };
  return isSpanContextValid(sc) ? sc : null;
}

/** The trace id of a traceparent (what GET /v1/deployments/:id shows). */
export function traceIdOf(tp: string | null | undefined): string | null {
  return parseTraceparent(tp)?.traceId ?? null;
}

export function tracingEnabled(): boolean {
  return activeTracer() !== null;
}

/** The active context as a traceparent; null when tracing is off or no span is active. */
export function currentTraceparent(): string | null {
  if (!activeTracer()) return null;
  const sc = trace.getSpanContext(context.active());
  return sc && isSpanContextValid(sc) ? formatTraceparent(sc) : null;
}

/** A context whose parent is the span a traceparent names (ROOT_CONTEXT when it names none). */
export function contextOf(tp: string | null | undefined): Context {
  const sc = parseTraceparent(tp);
  return sc ? trace.setSpanContext(ROOT_CONTEXT, sc) : ROOT_CONTEXT;
}

export function recordError(span: Span, err: unknown): void {
  const e = err instanceof Error ? err : new Error(String(err));
  span.recordException(e);
  span.setStatus({ code: SpanStatusCode.ERROR, message: e.message });
}

/** Records an error on the active span: for failures that are handled, not thrown (a
 *  permanent refusal is reported and moved past, yet the apply did fail). */
export function failActiveSpan(err: unknown): void {
  if (!activeTracer()) return;
  const span = trace.getActiveSpan();
  if (span) recordError(span, err);
}

export interface SpanOptions {
  attributes?: Attributes;
  /** Parent by traceparent instead of the active context (a change line, a report). */
  parent?: string | null;
  /** Spans this one follows from without being their child (a status report's applies). */
  links?: readonly (string | null | undefined)[];
  /**
   * Only as a child: with no span in the parent context, `fn` runs untraced. For the steps of a
   * workflow started without a trace (recovered, or begun before tracing was on), which would
   * otherwise each start a trace of their own, one per poll.
   */
  childOnly?: boolean;
}

/**
 * Runs `fn` in a span (a child of the active context unless `parent` is given). A throw is
 * recorded on this span, the one that failed, and rethrown. With tracing off it just runs `fn`.
 */
export function withSpan<T>(name: string, opts: SpanOptions, fn: (span: Span | null) => Promise<T> | T): Promise<T> {
  const a = activeTracer();
  if (!a) return untraced(fn);
  const parent = opts.parent !== undefined ? contextOf(opts.parent) : context.active();
  if (opts.childOnly && !trace.getSpan(parent)) return untraced(fn);
  const links: Link[] = [];
  for (const tp of opts.links ?? []) {
    const sc = parseTraceparent(tp);
    if (sc) links.push({ context: sc });
  }
  return a.tracer.startActiveSpan(name, { attributes: opts.attributes ?? {}, links }, parent, async (span) => {
    try {
      return await fn(span);
    } catch (err) {
      recordError(span, err);
      throw err;
    } finally {
      span.end();
    }
  });
}

function untraced<T>(fn: (span: Span | null) => Promise<T> | T): Promise<T> {
  try {
    return Promise.resolve(fn(null));
  } catch (err) {
    return Promise.reject(err);
  }
}

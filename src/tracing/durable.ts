// Durable spans: spans of work that outlives a process (a workflow invocation). Their ids are
// chosen when the invocation is started (planSpan), travel with it in the engine's table as an
// opaque carrier, become the active context whenever any process executes it (restore), and
// the span is emitted once, by the process that records the invocation's end (finished). A
// replay re-runs handler code but no step bodies, so spans opened inside steps are not
// emitted twice; annotations made by handler code (annotate, fail) are recomputed by the
// replay and kept only in memory until the end.
import { context, createContextKey, isSpanContextValid, ROOT_CONTEXT, SpanStatusCode, trace, TraceFlags, type Attributes } from '@opentelemetry/api';
import { RandomIdGenerator } from '@opentelemetry/sdk-trace-base';
import { activeTracer } from './provider';
import { formatTraceparent, parseTraceparent } from './spans';

interface Planned {
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId?: string | undefined;
  startMs: number;
  attributes?: Attributes | undefined;
}

/** Stored with an invocation: a planned span it ends, or only the context it continues. */
type Carrier = { planned: Planned } | { tp: string };

/** Set by planSpan for the start it wraps; the engine's capture takes it. */
const PLANNED = createContextKey('unkey-infra planned span');
/** Set by restore while an invocation executes: the durable span annotate/fail write to. */
const CURRENT = createContextKey('unkey-infra durable span');

const random = new RandomIdGenerator();
/** Annotations per planned span id, until its invocation ends or leaves this process. */
const notes = new Map<string, { attributes: Attributes; error: string | null }>();

/**
 * Runs `fn` (which starts an invocation) with a new span planned as the active context: the
 * invocation's spans become its children and its end emits it. Off: just runs `fn`.
 */
export function planSpan<T>(name: string, attributes: Attributes, fn: () => T): T {
  if (!activeTracer()) return fn();
  const parent = trace.getSpanContext(context.active());
  const hasParent = parent !== undefined && isSpanContextValid(parent);
  const planned: Planned = {
    name,
    traceId: hasParent ? parent.traceId : random.generateTraceId(),
    spanId: random.generateSpanId(),
    parentSpanId: hasParent ? parent.spanId : undefined,
    startMs: Date.now(),
    attributes,
  };
  const ctx = trace.setSpanContext(context.active(), spanContextOf(planned)).setValue(PLANNED, planned);
  return context.with(ctx, fn);
}

/** Adds attributes to the durable span of the executing invocation (none: no-op). */
export function annotate(attributes: Attributes): void {
  const p = context.active().getValue(CURRENT) as Planned | undefined;
  if (!p) return;
  const n = notes.get(p.spanId) ?? { attributes: {}, error: null };
  Object.assign(n.attributes, attributes);
  notes.set(p.spanId, n);
}

/** Marks the durable span of the executing invocation failed (a workflow that returns a
 *  failure as its result rather than throwing it). */
export function fail(message: string): void {
  const p = context.active().getValue(CURRENT) as Planned | undefined;
  if (!p) return;
  const n = notes.get(p.spanId) ?? { attributes: {}, error: null };
  n.error = message;
  notes.set(p.spanId, n);
}

function spanContextOf(p: Planned) {
  return { traceId: p.traceId, spanId: p.spanId, traceFlags: TraceFlags.SAMPLED, isRemote: true };
}

function decode(carrier: string | null): Carrier | null {
  if (!carrier) return null;
  try {
    const c = JSON.parse(carrier) as Carrier;
    if ('planned' in c && /^[0-9a-f]{32}$/.test(c.planned.traceId) && /^[0-9a-f]{16}$/.test(c.planned.spanId)) return c;
    if ('tp' in c && parseTraceparent(c.tp)) return c;
  } catch {
    // A carrier this version cannot read: the invocation runs untraced rather than failing.
  }
  return null;
}

/**
 * What the engine calls (src/workflow/engine TraceHooks; this part does not import the engine).
 * All three are no-ops with tracing off, so the engine stores and reads nothing then.
 */
export const engineTraceHooks = {
  capture(): string | null {
    if (!activeTracer()) return null;
    const planned = context.active().getValue(PLANNED) as Planned | undefined;
    if (planned) return JSON.stringify({ planned } satisfies Carrier);
    const sc = trace.getSpanContext(context.active());
    return sc && isSpanContextValid(sc) ? JSON.stringify({ tp: formatTraceparent(sc) } satisfies Carrier) : null;
  },

  restore<T>(carrier: string | null, fn: () => T): T {
    if (!activeTracer()) return fn();
    const c = decode(carrier);
    // Untraced: still leave the starter's context behind, or a child launched in process
    // would annotate its parent's span.
    if (!c) return context.with(ROOT_CONTEXT, fn);
    const ctx =
      'planned' in c
        ? trace.setSpanContext(ROOT_CONTEXT, spanContextOf(c.planned)).setValue(CURRENT, c.planned)
        : trace.setSpanContext(ROOT_CONTEXT, parseTraceparent(c.tp)!);
    return context.with(ctx, fn);
  },

  /** The invocation ended here (`failure` null: it succeeded), or, with `abandoned`, left this
   *  process unfinished (another one continues it and will emit the span). */
  finished(carrier: string | null, failure: string | null, abandoned: boolean): void {
    const c = decode(carrier);
    if (!c || !('planned' in c)) return;
    const note = notes.get(c.planned.spanId);
    notes.delete(c.planned.spanId);
    if (!abandoned) emit(c.planned, note?.attributes ?? {}, failure ?? note?.error ?? null);
  },
};

function emit(p: Planned, attributes: Attributes, error: string | null): void {
  const a = activeTracer();
  if (!a) return;
  const parent = p.parentSpanId ? trace.setSpanContext(ROOT_CONTEXT, { ...spanContextOf(p), spanId: p.parentSpanId }) : ROOT_CONTEXT;
  a.ids.preset = { traceId: p.traceId, spanId: p.spanId };
  let span;
  try {
    span = a.tracer.startSpan(p.name, { startTime: p.startMs, attributes: { ...p.attributes, ...attributes }, root: !p.parentSpanId }, parent);
  } finally {
    a.ids.preset = null;
  }
  if (error) span.setStatus({ code: SpanStatusCode.ERROR, message: error });
  span.end();
}

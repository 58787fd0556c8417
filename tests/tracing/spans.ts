// Helpers for tracing tests: the spans an in-memory exporter holds, by trace and by name.
import type { InMemorySpanExporter, ReadableSpan } from '@opentelemetry/sdk-trace-base';

export function spansOf(exporter: InMemorySpanExporter, traceId: string): ReadableSpan[] {
  return exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === traceId);
}

export function named(spans: ReadableSpan[], name: string): ReadableSpan[] {
  return spans.filter((s) => s.name === name);
}

export function one(spans: ReadableSpan[], name: string): ReadableSpan {
  const found = named(spans, name);
  if (found.length !== 1) throw new Error(`expected one ${name}, found ${found.length}: ${spans.map((s) => s.name).join(', ')}`);
  return found[0]!;
}

export const parentOf = (s: ReadableSpan) => s.parentSpanContext?.spanId;
export const idOf = (s: ReadableSpan) => s.spanContext().spanId;

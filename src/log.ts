// One pino logger factory so every mode logs the same JSON shape. Messages are static and
// lowercase; data goes in fields. No transport: worker-thread transports do not survive
// bundling, and JSON on stdout is what log shippers want anyway.
import { isSpanContextValid, trace } from '@opentelemetry/api';
import { pino, type Logger } from 'pino';

export type { Logger };

export const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

export function createLogger(level: LogLevel, bindings: Record<string, unknown> = {}): Logger {
  return pino({
    level,
    base: bindings,
    // Tokens travel in these places; never let them reach a log line.
    // Inside a span a line carries its ids, so logs and traces join. With tracing off the
    // API has no context manager and this finds nothing at once.
    mixin: traceFields,
    redact: { paths: ['req.headers.authorization', 'token', 'adminToken', '*.token', '*.adminToken'], censor: '[redacted]' },
  });
}

function traceFields(): Record<string, string> {
  const sc = trace.getActiveSpan()?.spanContext();
  return sc && isSpanContextValid(sc) ? { trace_id: sc.traceId, span_id: sc.spanId } : {};
}

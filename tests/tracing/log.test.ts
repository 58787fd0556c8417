// pino lines carry trace_id and span_id inside a span, and nothing outside one. Run in a child
// process: pino writes to fd 1 directly, past any stdout hook in this process.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { resolve } from 'node:path';

const root = resolve(import.meta.dirname, '../..');

const script = `
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { createLogger } from './src/log.ts';
import { startTracing, withSpan } from './src/tracing/index.ts';
const log = createLogger('info');
log.info('before tracing');
const exporter = new InMemorySpanExporter();
startTracing({ serviceName: 't', exporter });
log.info('outside a span');
await withSpan('outer', {}, async () => {
  await new Promise((r) => setTimeout(r, 5));
  log.info('inside a span');
});
const [span] = exporter.getFinishedSpans();
log.info({ expected: { trace_id: span.spanContext().traceId, span_id: span.spanContext().spanId } }, 'ids');
`;

test('log lines inside a span carry its trace_id and span_id; others carry none', async () => {
  const { stdout } = await promisify(execFile)(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: root });
  const lines = stdout.trim().split('\n').map((l) => JSON.parse(l));
  const by = (msg: string) => lines.find((l) => l.msg === msg);
  const { expected } = by('ids');
  assert.equal(by('inside a span').trace_id, expected.trace_id);
  assert.equal(by('inside a span').span_id, expected.span_id);
  for (const msg of ['before tracing', 'outside a span']) assert.equal(by(msg).trace_id, undefined, msg);
});

// The engine carrying a trace, without deployments: a planned span is stored with the
// invocation, restored when another engine (a replica, a restart) replays it, and emitted
// once, at the end, with the annotations of both executions; step spans are not emitted again
// by the replay; a child the handler starts continues the trace without ending its parent's
// span; and an engine without hooks stores nothing.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { z } from 'zod';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { SpanStatusCode } from '@opentelemetry/api';
import { testDb } from '../helpers/db';
import { defineService, handler, TerminalError } from '../../src/workflow/engine';
import { annotate, engineTraceHooks, planSpan, startTracing, withSpan } from '../../src/tracing';
import { testEngine, waitFor } from '../workflow/engine/helpers';
import { named, one, parentOf, idOf } from './spans';

const exporter = new InMemorySpanExporter();
startTracing({ serviceName: 'test', exporter });
const db = await testDb();

let awakeable = '';
const Child = defineService('traced-child', {
  go: handler({ input: z.object({}), output: z.string() }, async (ctx) => ctx.run('child', () => withSpan('child.step', {}, async () => 'c'))),
});
const Traced = defineService('traced', {
  run: handler({ input: z.object({ fail: z.boolean() }), output: z.string() }, async (ctx, { fail }) => {
    annotate({ 'before.handoff': true });
    await ctx.run('one', () => withSpan('step.one', {}, async () => 1));
    await ctx.call(Child, 'go', {});
    const awk = ctx.awakeable<void>();
    await ctx.run('publish', () => void (awakeable = awk.id));
    await awk.promise;
    annotate({ 'after.handoff': true });
    await ctx.run('two', () => withSpan('step.two', {}, async () => 2));
    if (fail) throw new TerminalError('it broke', { code: 'ERR_TEST_BROKE' });
    return 'ok';
  }),
});

const a = testEngine(db.sql, { tracing: engineTraceHooks, workerId: 'a', maxParked: 0 });
a.register(Child);
a.register(Traced);
const b = testEngine(db.sql, { tracing: engineTraceHooks, workerId: 'b' });
b.register(Child);
b.register(Traced);
await a.start();
// b takes over in the first test; the others use it too, so each starts it if none did yet
// (every test passes alone by name).
let bStarted = false;
const startB = async () => {
  if (bStarted) return;
  bStarted = true;
  await b.start();
};

test('replayed by another engine: one trace, the planned span once with every annotation, no step span twice', async () => {
  const { id } = await planSpan('traced.run', { 'planned.attr': 'x' }, () => a.send(Traced, 'run', { fail: false }));
  await waitFor('the awakeable', async () => awakeable !== '');
  assert.equal(named(exporter.getFinishedSpans(), 'traced.run').length, 0, 'not ended yet');
  // Engine a goes away with the invocation suspended; b takes it over from the journal.
  await a.stop();
  await startB();
  await b.resolveAwakeable(awakeable);
  assert.equal(await b.result(id), 'ok');
  const spans = exporter.getFinishedSpans();
  const root = one(spans, 'traced.run');
  assert.equal(root.attributes['planned.attr'], 'x');
  assert.equal(root.attributes['after.handoff'], true, 'annotations of the replaying engine');
  assert.equal(root.attributes['before.handoff'], true, 'and of the code it replayed');
  for (const name of ['step.one', 'step.two', 'child.step']) {
    const s = one(spans, name);
    assert.equal(s.spanContext().traceId, root.spanContext().traceId, name);
    assert.equal(parentOf(s), idOf(root), name);
  }
  const [stored] = await db.sql<{ carrier: string }[]>`SELECT carrier FROM engine_trace_contexts WHERE invocation_id = ${id}`;
  assert.ok(stored!.carrier.includes(root.spanContext().traceId));
});

test('a failed invocation ends its planned span with the error', async () => {
  awakeable = '';
  await startB();
  const { id } = await planSpan('traced.fail', {}, () => b.send(Traced, 'run', { fail: true }));
  await waitFor('the awakeable', async () => awakeable !== '');
  await b.resolveAwakeable(awakeable);
  await assert.rejects(b.result(id), /it broke/);
  const root = one(exporter.getFinishedSpans(), 'traced.fail');
  assert.equal(root.status.code, SpanStatusCode.ERROR);
  assert.equal(root.status.message, 'it broke');
});

test('an engine without hooks stores no carrier, even inside a planned span', async () => {
  const plain = testEngine(db.sql, { workerId: 'plain' });
  plain.register(Child);
  await plain.start();
  if (bStarted) await b.stop();
  const { id } = await planSpan('untraced', {}, () => plain.send(Child, 'go', {}));
  assert.equal(await plain.result(id), 'c');
  const rows = await db.sql`SELECT 1 FROM engine_trace_contexts WHERE invocation_id = ${id}`;
  assert.equal(rows.length, 0);
  assert.equal(named(exporter.getFinishedSpans(), 'untraced').length, 0);
});

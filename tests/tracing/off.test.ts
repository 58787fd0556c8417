// Tracing off (the default): nothing is traced and nothing is stored for it: no carrier with
// the invocation, no traceparent on the outbox row or on the NDJSON change line, traceId null.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { assertEvery } from '../helpers/assert';
import { deploymentsOf, testStack } from '../helpers/stack';

const stack = await testStack({ regions: ['us-east-1'] });

test('with tracing off a deploy stores no trace context anywhere and shows traceId null', async () => {
  const created = await stack.api('/v1/deployments', { body: { image: 'nginx:1.27', regions: ['us-east-1'], replicas: 1 } });
  assert.equal(created.status, 202);
  const id = created.body.id;
  // Waits for an end either way, so a failed deploy says why instead of timing out.
  const d = await deploymentsOf(stack, ['us-east-1']).status(id, ['ready', 'failed', 'stopped']);
  assert.equal(d.status, 'ready', JSON.stringify(d));
  assert.equal(d.traceId, null);
  const [carriers] = await stack.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM engine_trace_contexts`;
  assert.equal(carriers!.n, 0);
  const [traced] = await stack.db.sql<{ n: number }[]>`SELECT count(*)::int AS n FROM deployment_changes WHERE traceparent IS NOT NULL`;
  assert.equal(traced!.n, 0);
  const [row] = await stack.db.sql<{ traceparent: string | null }[]>`SELECT traceparent FROM deployments WHERE id = ${id}`;
  assert.equal(row!.traceparent, null);
  // The change line the agent gets: a full sync of the region, no traceparent in any line.
  const r = await fetch(`${stack.ctrl.url}/v1/cluster/changes?wait=1`, { headers: { authorization: `Bearer ${stack.regions.get('us-east-1')!.token}` } });
  const lines = (await r.text()).trim().split('\n').map((l) => JSON.parse(l));
  assert.ok(lines.some((l) => l.type === 'change' && l.resource.id === id));
  assertEvery(lines, (l) => !('traceparent' in l));
});

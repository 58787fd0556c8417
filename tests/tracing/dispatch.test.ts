// krane's side of a traced change: the dispatcher handles an event that carries a traceparent
// inside <kind>.apply.<region>, a child of that traceparent; a permanent refusal is recorded on
// it; the apply report made inside it carries its traceparent; untraced events make no span.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { SpanStatusCode } from '@opentelemetry/api';
import { startTracing } from '../../src/tracing';
import { Dispatcher } from '../../src/sync/dispatcher';
import { ApplyOutcomes } from '../../src/kube/outcomes';
import { PermanentError, type ApplyReport, type ResourceController, type StatusSink } from '../../src/sync/wire';
import { createLogger } from '../../src/log';

const exporter = new InMemorySpanExporter();
startTracing({ serviceName: 'test', exporter });

const WRITE = '00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01';
const reports: ApplyReport[] = [];
const sink: StatusSink = { instance: () => {}, sentinel: () => {}, apply: (r) => void reports.push(r), gc: () => {} };
const outcomes = new ApplyOutcomes(sink);
const controller: ResourceController = {
  apply: async (ref) => {
    if (ref.id === 'bad') throw new PermanentError('StatefulSet is invalid', undefined, 'ERR_KUBE_INVALID');
    outcomes.applied(ref, true);
  },
  delete: async (ref) => outcomes.deleted(ref),
  gc: async () => {},
};
const d = new Dispatcher({
  controller,
  concurrency: 2,
  logger: createLogger('silent'),
  retries: 0,
  retryDelayMs: 1,
  onPermanentFailure: (ref, err) => outcomes.failedPermanently(ref, err),
});
const state = { action: 'delete' as const };
const apply = (id: string) => ({
  action: 'apply' as const, kind: 'deployment' as const, deploymentId: id, workspaceId: 'w', projectId: 'p', appId: 'a', environmentId: 'e',
  region: 'us-east-1', namespace: 'unkey', image: 'i', replicas: 1, cpuMillicores: 100, memoryMib: 128, port: 8080, command: [], env: {},
});

test('a traced change is applied in deployment.apply.<region> under the write, and its report carries the span', async () => {
  await d.submit({ type: 'deployment_topology', id: 'dep-1', region: 'us-east-1' }, apply('dep-1'), WRITE);
  const [span] = exporter.getFinishedSpans().filter((s) => s.name === 'deployment.apply.us-east-1');
  assert.ok(span);
  assert.equal(span.spanContext().traceId, WRITE.split('-')[1]);
  assert.equal(span.parentSpanContext?.spanId, WRITE.split('-')[2]);
  assert.equal(span.attributes['resource.id'], 'dep-1');
  assert.equal(reports.at(-1)!.traceparent, `00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`);
});

test('a permanent refusal is recorded on the apply span; untraced events make no span and reports no traceparent', async () => {
  await d.submit({ type: 'deployment_topology', id: 'bad', region: 'us-east-1' }, apply('bad'), WRITE);
  const bad = exporter.getFinishedSpans().find((s) => s.attributes['resource.id'] === 'bad')!;
  assert.equal(bad.status.code, SpanStatusCode.ERROR);
  assert.equal(reports.at(-1)!.outcome, 'failed');
  const before = exporter.getFinishedSpans().length;
  await d.submit({ type: 'sentinel', id: 'snt-1', region: 'eu-west-1' }, state);
  assert.equal(exporter.getFinishedSpans().length, before);
  assert.equal(reports.at(-1)!.traceparent, undefined);
});

test('sentinel and cilium changes are named after their kind', async () => {
  await d.submit({ type: 'sentinel', id: 'snt-2', region: 'eu-west-1' }, state, WRITE);
  await d.submit({ type: 'cilium_network_policy', id: 'cnp-1', region: 'eu-west-1' }, state, WRITE);
  const names = exporter.getFinishedSpans().map((s) => s.name);
  assert.ok(names.includes('sentinel.apply.eu-west-1'));
  assert.ok(names.includes('cilium.apply.eu-west-1'));
});

// `deploy --wait` ends by printing the deployment's trace id (with tracing on in ctrl), the
// same one GET /v1/deployments/:id returns; `deployments get` shows it too.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { InMemorySpanExporter } from '@opentelemetry/sdk-trace-base';
import { startTracing } from '../../src/tracing';
import { testStack } from '../helpers/stack';
import { runCli } from '../helpers/cli';

startTracing({ serviceName: 'test', exporter: new InMemorySpanExporter() });
const stack = await testStack({ regions: ['us-east-1'] });

test('deploy --wait prints the trace id at the end', async () => {
  const r = await runCli(['deploy', '--api', stack.ctrl.url, '--token', stack.adminToken, '--image', 'nginx:1.27', '--regions', 'us-east-1', '--wait'], {
    watch: { pollMs: 200 },
  });
  assert.equal(r.code, 0, r.stderr + r.stdout);
  const id = /created deployment (dep-[a-z0-9]+)/.exec(r.stdout)?.[1];
  const traceId = (await stack.api(`/v1/deployments/${id}`)).body.traceId;
  assert.match(traceId, /^[0-9a-f]{32}$/);
  assert.match(r.stdout, new RegExp(`is ready after .*\\n(.*\\n)*  trace: ${traceId}\\n$`), r.stdout);
  const get = await runCli(['deployments', 'get', id!, '--api', stack.ctrl.url, '--token', stack.adminToken]);
  assert.equal(get.code, 0, get.stderr);
  assert.match(get.stdout, new RegExp(`^trace:\\s+${traceId}$`, 'm'));
});

// The last export on shutdown is bounded: a collector that is down must neither fail a clean
// shutdown nor eat the pod's termination grace (src/tracing/provider.ts).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { within } from '../helpers/wait';

test('shutdown with the collector down neither fails nor hangs: the spans are dropped and said so', async () => {
  const { startTracing, activeTracer } = await import('../../src/tracing/provider');
  const { createServer } = await import('node:net');
  // A collector that accepts connections and never answers.
  const silent = createServer(() => {});
  await new Promise<void>((r) => silent.listen(0, '127.0.0.1', r));
  const port = (silent.address() as import('node:net').AddressInfo).port;
  const h = startTracing({ serviceName: 'test', endpoint: `http://127.0.0.1:${port}` });
  activeTracer()!.tracer.startSpan('lost').end();
  // Ending at all is the claim (a hang is the failure): within() fails it at the safety net.
  await within(h.shutdown(), 'the tracing shutdown');
  silent.close();
});

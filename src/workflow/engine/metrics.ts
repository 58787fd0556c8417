// Prometheus metrics of one engine, registered on the process registry when one is given.
import client from 'prom-client';
import type { Registry } from 'prom-client';

export interface EngineMetrics {
  finished(service: string, handler: string, status: string): void;
}

export function engineMetrics(registry: Registry | undefined, sizes: () => { running: number; parked: number }): EngineMetrics {
  if (!registry) return { finished: () => {} };
  const finished = new client.Counter({
    name: 'engine_invocations_finished_total',
    help: 'Invocations finished by this process, by target and final status',
    labelNames: ['service', 'handler', 'status'],
    registers: [registry],
  });
  new client.Gauge({
    name: 'engine_executions',
    help: 'Executions in memory by state: running (holding a worker slot) or parked (suspended)',
    labelNames: ['state'],
    registers: [registry],
    collect() {
      const s = sizes();
      this.set({ state: 'running' }, s.running);
      this.set({ state: 'parked' }, s.parked);
    },
  });
  return { finished: (service, handler, status) => finished.inc({ service, handler, status }) };
}

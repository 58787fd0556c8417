// Prometheus metrics of one engine, registered on the process registry when one is given.
import client from 'prom-client';
import type { Registry } from 'prom-client';

export interface EngineMetrics {
  finished(service: string, handler: string, status: string): void;
  /** A running execution dropped because its lease lapsed or another process took it over. */
  leaseLost(): void;
}

export function engineMetrics(registry: Registry | undefined, sizes: () => { running: number; parked: number }): EngineMetrics {
  if (!registry) return { finished: () => {}, leaseLost: () => {} };
  const finished = new client.Counter({
    name: 'engine_invocations_finished_total',
    help: 'Invocations finished by this process, by target and final status',
    labelNames: ['service', 'handler', 'status'],
    registers: [registry],
  });
  // Nonzero under load means leases are too short for the steps' waits (a pool queue, a slow
  // database): the work reruns elsewhere, correct but wasted. bench:deploy --concurrent reads it.
  const leasesLost = new client.Counter({
    name: 'engine_leases_lost_total',
    help: 'Running executions this process dropped because their lease lapsed or another process took it over',
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
  return { finished: (service, handler, status) => finished.inc({ service, handler, status }), leaseLost: () => leasesLost.inc() };
}

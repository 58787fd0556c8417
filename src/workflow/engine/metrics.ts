// Prometheus metrics of one engine, registered on the process registry when one is given: what
// this process finished and lost, its executions in memory, the steps it retries, and, read from
// the database at scrape time (so every replica reports the same), the unfinished invocations
// by status and how overdue the latest of each is: a ready invocation nobody starts, a lease
// nobody renews or takes over, a timer that does not fire (the alert UnkeyEngineInvocationsStuck).
import client from 'prom-client';
import type { Registry } from 'prom-client';
import type { BacklogRow } from './invocation-store';

export interface EngineMetrics {
  finished(service: string, handler: string, status: string): void;
  /** A running execution dropped because its lease lapsed or another process took it over. */
  leaseLost(): void;
  /** A step's attempt failed and it is tried again. */
  stepRetried(service: string): void;
}

/** The statuses of unfinished invocations, each reported (0 when none). */
const UNFINISHED = ['scheduled', 'queued', 'ready', 'running', 'suspended'] as const;

export function engineMetrics(registry: Registry | undefined, sizes: () => { running: number; parked: number }, backlog: () => Promise<BacklogRow[]>): EngineMetrics {
  if (!registry) return { finished: () => {}, leaseLost: () => {}, stepRetried: () => {} };
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
  const retries = new client.Counter({
    name: 'engine_step_retries_total',
    help: 'Step attempts that failed and were tried again, by service (a dependency failing; outages of the database are waited out, not counted)',
    labelNames: ['service'],
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
  // One query per scrape feeds both gauges (they collect one after the other).
  let read: Promise<BacklogRow[]> | undefined;
  const rows = () => (read ??= backlog().finally(() => setTimeout(() => (read = undefined), 0)));
  const byStatus = async (pick: (r: BacklogRow) => number) => {
    let found: Map<string, BacklogRow>;
    try {
      found = new Map((await rows()).map((r) => [r.status, r]));
    } catch {
      // The database does not answer: /metrics still does, with the last values (/readyz says why).
      return [];
    }
    return UNFINISHED.map((status) => [status, found.has(status) ? pick(found.get(status)!) : 0] as const);
  };
  new client.Gauge({
    name: 'engine_invocations',
    help: 'Unfinished invocations in the database, by status (every ctrl replica reports the same)',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      for (const [status, n] of await byStatus((r) => r.count)) this.set({ status }, n);
    },
  });
  new client.Gauge({
    name: 'engine_overdue_seconds',
    help: 'How far past its due time the most overdue unfinished invocation of each status is (0: none is late)',
    labelNames: ['status'],
    registers: [registry],
    async collect() {
      for (const [status, s] of await byStatus((r) => r.overdueSeconds)) this.set({ status }, s);
    },
  });
  return {
    finished: (service, handler, status) => {
      finished.inc({ service, handler, status });
      // Every service that finished work has a retry series, at 0 until a step retries, so
      // rate() and the dashboard see a flat line rather than no data.
      retries.inc({ service }, 0);
    },
    leaseLost: () => leasesLost.inc(),
    stepRetried: (service) => retries.inc({ service }),
  };
}

// The deploy workflow's metrics under seed 001's names. Counters and histograms are recorded
// inside the steps that write the outcome (once per execution of that step); gauges of the
// fleet are read from the database at scrape time, so every ctrl replica reports the same.
import client from 'prom-client';
import type { Registry } from 'prom-client';
import { deployments, type Sql } from '../store';
import { registerProgressiveMetrics } from './progressive/metrics';

export interface WorkflowMetrics {
  finished(status: 'ready' | 'failed' | 'stopped' | 'rolled_back', createdAt: Date): void;
  built(seconds: number): void;
  polled(attempts: number): void;
  /** One check of a canary or blue-green gate: krane's signals, and Prometheus when configured. */
  analysed(signal: 'instances' | 'prometheus', verdict: 'pass' | 'fail' | 'inconclusive'): void;
}

export const noMetrics: WorkflowMetrics = { finished: () => {}, built: () => {}, polled: () => {}, analysed: () => {} };

export function workflowMetrics(registry: Registry, sql: Sql): WorkflowMetrics {
  const registers = [registry];
  registerProgressiveMetrics(registry, sql);
  const duration = new client.Histogram({
    name: 'deployment_workflow_duration_seconds',
    help: 'Create → ready/failed/stopped time of deployments',
    labelNames: ['status'],
    buckets: [0.25, 0.5, 1, 2, 5, 10, 30, 60, 120, 300, 600],
    registers,
  });
  const status = new client.Counter({ name: 'deployment_workflow_status', help: 'Deploy workflows finished, by outcome', labelNames: ['status'], registers });
  const build = new client.Histogram({ name: 'deployment_build_duration_seconds', help: 'Image builds', buckets: [1, 5, 15, 30, 60, 120, 300, 900], registers });
  const polling = new client.Histogram({
    name: 'deployment_polling_attempts',
    help: 'Readiness checks a deploy made before its instances were all running (or one failed)',
    buckets: [1, 2, 3, 5, 10, 20, 60],
    registers,
  });
  const analysis = new client.Counter({
    name: 'deployment_analysis_checks_total',
    help: 'Checks of canary and blue-green gates, by signal and verdict',
    labelNames: ['signal', 'verdict'],
    registers,
  });
  let counts: Promise<Awaited<ReturnType<typeof deployments.fleetCounts>>> | undefined;
  // One query per scrape feeds all four gauges.
  const fleet = () => (counts ??= deployments.fleetCounts(sql).finally(() => setTimeout(() => (counts = undefined), 0)));
  new client.Gauge({
    name: 'deployment_instances_by_status',
    help: 'Instances krane reports, by status',
    labelNames: ['status'],
    registers,
    async collect() {
      const c = await fleet();
      for (const s of ['pending', 'creating', 'running', 'failed']) this.set({ status: s }, c.instances[s] ?? 0);
    },
  });
  new client.Gauge({
    // The seed calls this gauge deployment_instances_total; Prometheus reserves `_total` for
    // counters (promtool check metrics rejects it), so it has the conventional name (README).
    name: 'deployment_instances',
    help: 'Instances krane reports',
    registers,
    async collect() {
      this.set(Object.values((await fleet()).instances).reduce((a, b) => a + b, 0));
    },
  });
  new client.Gauge({
    name: 'deployment_topology_status',
    help: "Deployment topologies (deployment × region) by seed 001's status (starting, started, stopping, stopped), from krane's reports",
    labelNames: ['status'],
    registers,
    async collect() {
      const c = await fleet();
      for (const s of deployments.TOPOLOGY_STATUSES) this.set({ status: s }, c.topologies[s] ?? 0);
    },
  });
  new client.Gauge({
    name: 'deployment_topology_regions',
    help: 'Regions with at least one running topology',
    registers,
    async collect() {
      this.set((await fleet()).regions);
    },
  });
  return {
    finished(s, createdAt) {
      status.inc({ status: s });
      duration.observe({ status: s }, (Date.now() - createdAt.getTime()) / 1000);
    },
    built: (seconds) => build.observe(seconds),
    polled: (attempts) => polling.observe(attempts),
    analysed: (signal, verdict) => analysis.inc({ signal, verdict }),
  };
}

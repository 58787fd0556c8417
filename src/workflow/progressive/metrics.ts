// Progressive delivery's Prometheus gauges, read from the database at scrape time (every ctrl
// replica reports the same): the weights of environments whose traffic is split (a canary or a
// blue-green switch under way; the dashboard's canary traffic), and the quarantined images with
// when the newest was quarantined (the alert UnkeyImageQuarantined).
import client from 'prom-client';
import { quarantine, routes, type Sql } from '../../store';

export function registerProgressiveMetrics(registry: client.Registry, sql: Sql): void {
  const registers = [registry];
  new client.Gauge({
    name: 'deployment_traffic_weight',
    help: 'Percent of an environment\'s traffic each deployment gets, for environments whose traffic is split (gone once one deployment has it all)',
    labelNames: ['environment', 'deployment'],
    registers,
    async collect() {
      const rows = await routes.splitBackends(sql).catch(() => null);
      if (!rows) return; // the database does not answer: keep the last values
      this.reset();
      for (const r of rows) this.set({ environment: r.environmentId, deployment: r.deploymentId }, r.weight);
    },
  });
  // One query feeds both quarantine gauges (they collect one after the other).
  let read: Promise<{ images: number; newestAt: Date | null }> | undefined;
  const summary = () => (read ??= quarantine.quarantineSummary(sql).finally(() => setTimeout(() => (read = undefined), 0)));
  new client.Gauge({
    name: 'deployment_quarantined_images',
    help: 'Images quarantined after failing in an environment, over all environments',
    registers,
    async collect() {
      const s = await summary().catch(() => null);
      if (s) this.set(s.images);
    },
  });
  new client.Gauge({
    name: 'deployment_quarantine_newest_timestamp_seconds',
    help: 'When the newest quarantine of an image happened (Unix time; 0 while none is quarantined)',
    registers,
    async collect() {
      const s = await summary().catch(() => null);
      if (s) this.set(s.newestAt ? new Date(s.newestAt).getTime() / 1000 : 0);
    },
  });
}

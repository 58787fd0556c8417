// Progressive delivery's Prometheus gauges, read from the database at scrape time (every ctrl
// replica reports the same): how many environments have their traffic split (a canary or a
// blue-green switch under way; the dashboard's canary traffic), and the quarantined images with
// when the newest was quarantined (the alert UnkeyImageQuarantined).
//
// No label carries a tenant's id: /metrics is open on the API's port (the scraper needs no
// token), so an environment or deployment id there would tell any client, another tenant's key
// or none, which of B's environments are mid canary, B's deployment ids and their weights. Who
// has what share is in the API (GET /v1/environments/{id}/traffic, scoped like every read).
import client from 'prom-client';
import { quarantine, routes, type Sql } from '../../store';

export function registerProgressiveMetrics(registry: client.Registry, sql: Sql): void {
  const registers = [registry];
  new client.Gauge({
    name: 'deployment_traffic_splits',
    help: 'Environments whose traffic is split between deployments (a canary step, a blue-green switch)',
    registers,
    async collect() {
      const rows = await routes.splitBackends(sql).catch(() => null);
      if (!rows) return; // the database does not answer: keep the last value
      this.set(new Set(rows.map((r) => r.environmentId)).size);
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

// Prometheus metrics of krane's Kubernetes side, read from the counters the parts keep (no
// hot-path instrumentation): API requests by verb, applies done and skipped, objects deleted,
// and the status watches' lists, watches and 410s.
import client from 'prom-client';
import type { KubeClient } from './client';
import type { ApplyController } from './apply-controller';
import type { Reflector } from './reflector';

export function registerKubeMetrics(registry: client.Registry, api: KubeClient, controller: ApplyController, reflectors: Record<string, Reflector>): void {
  const registers = [registry];
  new client.Gauge({
    name: 'krane_kube_requests',
    help: 'Kubernetes API requests sent since start, by verb',
    labelNames: ['verb'],
    registers,
    collect() {
      for (const [verb, n] of Object.entries(api.counts)) this.set({ verb }, n);
    },
  });
  new client.Gauge({
    name: 'krane_objects',
    help: 'Object operations since start: applied (sent), skipped (hash matched), deleted',
    labelNames: ['op'],
    registers,
    collect() {
      for (const [op, n] of Object.entries(controller.stats)) this.set({ op }, n);
    },
  });
  new client.Gauge({
    name: 'krane_watch_events',
    help: 'Status watch activity since start, by watch and kind of event',
    labelNames: ['watch', 'event'],
    registers,
    collect() {
      for (const [watch, r] of Object.entries(reflectors)) for (const [event, n] of Object.entries(r.counters)) this.set({ watch, event }, n);
    },
  });
}

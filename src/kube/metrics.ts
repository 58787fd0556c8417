// Prometheus metrics of krane's Kubernetes side, read from the counters the parts keep (no
// hot-path instrumentation): API requests by verb, applies done and skipped, objects deleted,
// the status watches' lists, watches and 410s, the GC brake (passes refused, objects held), and
// whether this replica leads its region.
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
  new client.Counter({
    name: 'krane_gc_refused_total',
    help: 'GC passes the brake refused because they would delete too much (src/kube/gc-brake.ts)',
    registers,
    collect() {
      this.reset();
      this.inc(controller.stats.gcRefused);
    },
  });
  new client.Counter({
    name: 'krane_drift_repairs_total',
    help: 'Objects krane put back after a change made behind its back (deleted, re-specced, relabelled), by kind',
    labelNames: ['kind'],
    registers,
    collect() {
      this.reset();
      for (const [kind, n] of Object.entries(controller.drift.snapshot().byKind)) this.inc({ kind }, n);
    },
  });
  new client.Gauge({
    name: 'krane_gc_held',
    help: 'Objects a refused GC pass holds back until an operator confirms (krane gc --confirm)',
    registers,
    collect() {
      this.set(controller.brake.heldObjects);
    },
  });
}

/**
 * 1 while this krane holds its region's Lease (or runs without election), else 0: summed over a
 * region's replicas, 0 means no krane applies anything there (the alert UnkeyKraneNoLeader).
 */
export function registerLeaderMetrics(registry: client.Registry, isLeader: () => boolean): void {
  new client.Gauge({
    name: 'krane_leader',
    help: '1 while this krane is its region\'s leader (streams and applies), 0 while it stands by',
    registers: [registry],
    collect() {
      this.set(isLeader() ? 1 : 0);
    },
  });
}

/** The change-feed watcher's counters (src/sync/watcher.ts stats), read at scrape time. */
export function registerFeedMetrics(registry: client.Registry, stats: object): void {
  new client.Gauge({
    name: 'krane_feed',
    help: 'Change-feed watcher counters since start (streams, snapshots, failures, resets, events)',
    labelNames: ['counter'],
    registers: [registry],
    collect() {
      for (const [counter, n] of Object.entries(stats)) if (typeof n === 'number') this.set({ counter }, n);
    },
  });
}

/**
 * Seed 001's deployment_instance_startup_time_seconds: from an instance's creation to running
 * (Ready), as krane sees it. Buckets from half a second (a small image already on the node) to
 * ten minutes (a large pull on a cold node), where a deploy would have timed out anyway.
 */
export function instanceStartupHistogram(registry: client.Registry): client.Histogram {
  return new client.Histogram({
    name: 'deployment_instance_startup_time_seconds',
    help: 'Seconds from an instance (pod) being created to it running (Ready), observed by krane',
    buckets: [0.5, 1, 2, 5, 10, 20, 30, 60, 120, 300, 600],
    registers: [registry],
  });
}

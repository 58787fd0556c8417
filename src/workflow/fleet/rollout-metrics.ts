// The fleet rollout's Prometheus gauges, read at scrape time from the rollout's state and its
// sentinels' rows (so every ctrl replica reports the same): the state it is in (the alert
// UnkeyRolloutPaused) and its sentinels by outcome (the dashboard's rollout panel).
import client from 'prom-client';
import { rolloutItems, type Sql } from '../../store';
import type { Engine } from '../engine';
import { ROLLOUT_KEY, ROLLOUT_STATES, type RolloutServiceDef, type RolloutState } from './rollout';

const OUTCOMES = ['succeeded', 'failed', 'skipped', 'pending'] as const;

export function registerRolloutMetrics(registry: client.Registry, deps: { engine: Engine; def: RolloutServiceDef; sql: Sql }): void {
  const current = async (): Promise<RolloutState | undefined> => {
    const s = (await deps.engine.state(deps.def, ROLLOUT_KEY)).rollout as RolloutState | { state?: string } | undefined;
    // A rollout saved before its sentinels were rows has no counts to read.
    return s && 'waveSizes' in s ? s : undefined;
  };
  new client.Gauge({
    name: 'unkey_rollout_state',
    help: "1 for the state the fleet's sentinel rollout is in (idle before any), 0 for the others",
    labelNames: ['state'],
    registers: [registry],
    async collect() {
      const s = await current().catch(() => null);
      if (s === null) return; // the database does not answer: keep the last values
      for (const state of ROLLOUT_STATES) this.set({ state }, (s?.state ?? 'idle') === state ? 1 : 0);
    },
  });
  new client.Gauge({
    name: 'unkey_rollout_sentinels',
    help: "Sentinels of the current (or last) fleet rollout by outcome: succeeded, failed, skipped, pending",
    labelNames: ['outcome'],
    registers: [registry],
    async collect() {
      try {
        const s = await current();
        const counts = s ? await rolloutItems.waveCounts(deps.sql, s.rolloutId) : [];
        for (const outcome of OUTCOMES) this.set({ outcome }, counts.reduce((n, w) => n + w[outcome], 0));
      } catch {
        // The database does not answer: keep the last values (/readyz says why).
      }
    },
  });
}

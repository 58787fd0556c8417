// What ctrl does after storing a krane status report: wake the workflows waiting on it and
// publish live progress. Kept out of the HTTP route so the route stays about validation and
// storage, and the wake-up rules sit next to the workflows that wait.
//
// Only decisive moments send an invocation: a deploy is notified once its instances are all
// running or one failed, a sentinel deploy once krane reports it converged. Everything else
// is left to the workflows' periodic re-check. A report naming many resources costs a constant
// number of queries plus a few per deployment still deploying (reports after a relist name
// every resource of the region; most are long settled).
import type { Logger } from '../log';
import { deployments, events, sentinels, type Sql } from '../store';
import type { LiveEvent } from '../store/events';
import type { Engine } from './engine';
import type { DeployServiceDef } from './deploy/deploy';
import type { SentinelServiceDef } from './fleet/sentinel';
import { sentinelConverged } from './fleet/sentinel';
import { evaluateProgress } from './deploy/progress';

export interface StatusHooks {
  deploymentsReported(region: string, deploymentIds: string[]): Promise<void>;
  sentinelsReported(region: string, sentinelIds: string[]): Promise<void>;
}

export function statusHooks(deps: { sql: Sql; engine: Engine; deploy: DeployServiceDef; sentinel: SentinelServiceDef; logger: Logger }): StatusHooks {
  const { sql, engine, logger } = deps;
  return {
    async deploymentsReported(region, ids) {
      try {
        const states = await deployments.statesOf(sql, ids);
        for (const [id, d] of states) {
          if (d.status !== 'deploying') continue;
          const regions = await deployments.deploymentProgress(sql, id);
          const r = regions.find((x) => x.region === region);
          if (r) {
            await events.publishEvent(sql, {
              type: 'deployment.region',
              deploymentId: id,
              region,
              wanted: r.wanted,
              running: r.running,
              failed: r.failed.length,
              reason: r.failed[0]?.reason ?? null,
            });
          }
          if (evaluateProgress(regions, d.desiredState).state !== 'waiting') {
            await engine.send(deps.deploy, 'notifyInstances', {}, { key: id });
          }
        }
      } catch (err) {
        // The report is stored; the deploy's re-check picks the change up without us.
        logger.warn({ err, region, deployments: ids.length }, 'deployment status hook failed');
      }
    },
    async sentinelsReported(region, ids) {
      try {
        const rows = await sentinels.getSentinels(sql, ids);
        const live: LiveEvent[] = rows.map((s) => ({ type: 'sentinel.status', sentinelId: s.id, region, deployStatus: s.deployStatus, health: s.health, runningImage: s.runningImage }));
        await events.publishEvents(sql, live);
        for (const s of rows) {
          if (s.deployStatus === 'progressing' && sentinelConverged(s)) await engine.send(deps.sentinel, 'notifyReady', {}, { key: s.id });
        }
      } catch (err) {
        logger.warn({ err, region, sentinels: ids.length }, 'sentinel status hook failed');
      }
    },
  };
}

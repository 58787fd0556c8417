// DesiredStateService: start and stop a deployment (ChangeDesiredState of seed 001), keyed by
// deployment id so changes to one deployment apply in order. Each change is one runTx (the
// deployment row, its topologies, a stop's withdrawal from the routing table, and their outbox
// rows commit with the journal entry), then a one-way send: a stop wakes a deploy that is
// waiting for instances so it ends `stopped` at once; a start runs the deploy workflow again to
// bring the instances back and mark it ready (and, when nothing serves the environment, take
// its traffic back: deploy.ts#markReady).
import { z } from 'zod';
import { defineObject, handler, TerminalError } from '../engine';
import { deployments, quarantine, tenancy, topology, type Sql } from '../../store';
import type { TxSql } from '../../store/db';
import type { Deployment } from '../../store/deployments';
import type { DeployServiceDef } from './deploy';
import { withdrawTraffic } from '../progressive/traffic';

export const DESIRED_STATE_SERVICE = 'DesiredStateService';

export const ChangeInput = z.object({ desired: z.enum(['running', 'stopped']) });
/** `generation`: the desired-state generation after this change (or as found, unchanged): of two
 *  concurrent changes the higher one was applied last. Absent from answers of older journals. */
export const ChangeOutput = z.object({ deploymentId: z.string(), desired: z.enum(['running', 'stopped']), changed: z.boolean(), generation: z.number().int().optional() });

export function desiredStateService(deps: { sql: Sql; deploy: DeployServiceDef; apexDomain: string }) {
  return defineObject(DESIRED_STATE_SERVICE, {
    exclusive: {
      change: handler({ input: ChangeInput, output: ChangeOutput }, async (ctx, { desired }) => {
        const id = ctx.key;
        const step = await ctx.runTx('change', async (tx): Promise<{ changed: boolean; generation: number }> => {
          // A deployment never changes environment, so finding its table before any lock is safe.
          const found = await deployments.getDeployment(tx, id);
          if (!found) throw new TerminalError(`deployment ${id} not found`, { code: 'ERR_NOT_FOUND' });
          // A stop takes the deployment's traffic away, taking the table's lock before the
          // deployment's row (the lock order of traffic.ts). Also when it was stopped already: a
          // table written before stops withdrew traffic is repaired by stopping again.
          if (desired === 'stopped') await withdrawTraffic(tx, deps.apexDomain, found.environmentId, id);
          const d = (await deployments.lockDeployment(tx, id))!;
          if (d.desiredState === desired) return { changed: false, generation: d.desiredGeneration };
          if (desired === 'running' && d.status === 'failed') {
            throw new TerminalError(`deployment ${id} failed; roll back or deploy again instead of starting it`, { code: 'ERR_DEPLOYMENT_STATE_CONFLICT' });
          }
          if (desired === 'running') await refuseQuarantinedRestart(tx, { ...d, image: found.image });
          // Held against a deletion until this commits (a deletion locks the row FOR UPDATE and
          // refuses while anything runs): of a deletion and a start, whichever comes second sees
          // the first. Started in a deleted environment, the deploy failed on it and left its
          // workloads running with nothing to stop them (issue 33).
          if (desired === 'running' && !(await tenancy.shareEnvironment(tx, d.environmentId))) {
            throw new TerminalError(`environment ${d.environmentId} was deleted; deployment ${id} cannot start again (deploy into a live environment instead)`, {
              code: 'ERR_DEPLOYMENT_STATE_CONFLICT',
            });
          }
          const row = (await deployments.commandDesiredState(tx, id, desired))!;
          await topology.setTopologyStatus(tx, id, desired);
          // A deployment still on its way keeps its status: its deploy notices the stop itself.
          if (desired === 'stopped' && (d.status === 'ready' || d.status === 'stopped')) await deployments.setDeploymentStatus(tx, id, 'stopped');
          if (desired === 'running') await deployments.setDeploymentStatus(tx, id, 'deploying');
          return { changed: true, generation: row.desiredGeneration };
        });
        // A journal written before answers carried the generation holds a plain boolean.
        const { changed, generation } = typeof step === 'boolean' ? { changed: step as boolean, generation: undefined } : step;
        if (changed && desired === 'stopped') await ctx.send(deps.deploy, 'notifyInstances', {}, { key: id });
        if (changed && desired === 'running') {
          await ctx.send(deps.deploy, 'deploy', { restart: true }, { key: id, idempotencyKey: `start:${ctx.invocationId}` });
        }
        return { deploymentId: id, desired, changed, ...(generation !== undefined ? { generation } : {}) };
      }),
    },
  });
}

export type DesiredStateServiceDef = ReturnType<typeof desiredStateService>;

/**
 * A start does not walk again: it brings the instances back and marks them ready. So a canary or
 * blue-green rolled back because its own signals failed (its image quarantined in that
 * transaction, walk.ts#rollBack) would come back `ready` with no analysis at all. Such a start is
 * refused; releasing the image (DELETE .../quarantine) or a forced deploy is the way back.
 */
async function refuseQuarantinedRestart(tx: TxSql, d: Pick<Deployment, 'id' | 'status' | 'environmentId' | 'image'>): Promise<void> {
  if (d.status !== 'rolled_back' || !d.image) return;
  const q = await quarantine.findQuarantined(tx, d.environmentId, d.image);
  if (!q) return;
  throw new TerminalError(
    `deployment ${d.id} was rolled back and its image ${d.image} is quarantined (${q.reason}); release the image or deploy again with force instead of starting it`,
    { code: 'ERR_DEPLOYMENT_STATE_CONFLICT' },
  );
}

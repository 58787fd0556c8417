// /v1/sentinel-rollouts: start a fleet rollout, read the current one, resume / cancel / roll back.
// The current rollout is its state (counts, waves' sizes) with per-wave counts and keyset pages of
// its succeeded, failed and skipped sentinels read from sentinel_rollout_items, so the answer
// stays small at any fleet size (issue 28); /current/sentinels pages the rows themselves.
// Fleet-wide: only an unscoped credential (the admin token) may call them. Each change's audit
// row commits with the workflow's start (the engine's `alongside`).
import type { FastifyInstance } from 'fastify';
import { rolloutItems } from '../../store';
import type { ItemStatus, RolloutItem } from '../../store/rollout-items';
import { AppError, validationError } from '../../errors';
import { destinationProblem, ROLLOUT_KEY, type OutboundPolicy, type RolloutState, type Workflows } from '../../workflow';
import type { Engine } from '../../workflow/engine';
import { StartRolloutBody, RolloutActionQuery, RolloutCurrentQuery, RolloutSentinelsQuery } from './schemas';
import { parse } from './parse';
import { auditInTx } from '../audit';
import type { FastifyRequest } from 'fastify';
import type { TxSql } from '../../store';
import type { ImageRule } from '../../image-allow';
import { sentinelImageRefusal } from './sentinels';

type List = 'succeeded' | 'failed' | 'skipped';
const LISTS: readonly List[] = ['succeeded', 'failed', 'skipped'];
const LIST_STATUS: Record<List, ItemStatus> = { succeeded: 'READY', failed: 'FAILED', skipped: 'SKIPPED' };
/** Where each listed sentinel failed or was skipped, and why (succeeded ones need no note). */
const notesOf = (items: RolloutItem[]) => Object.fromEntries(items.filter((i) => i.status !== 'READY').map((i) => [i.sentinelId, { wave: i.wave, ...(i.reason ? { reason: i.reason } : {}) }]));

export function rolloutRoutes(deps: { workflows: Workflows; engine: Engine; outbound: OutboundPolicy; sentinelImages?: readonly ImageRule[] | undefined }) {
  const { engine } = deps;
  const sql = deps.workflows.commands.sql;
  const def = deps.workflows.rollout;

  const stored = async () => (await engine.state(def, ROLLOUT_KEY)).rollout as RolloutState | undefined;

  /**
   * The handlers re-check under the key, but they queue behind a running wave: refusing a
   * call the current state already rules out answers 409 now instead of after that wave.
   */
  const requireState = async (allowed: readonly string[], what: string) => {
    const state = (await stored())?.state ?? 'idle';
    if (!allowed.includes(state)) throw new AppError(what === 'rollout' ? 'ERR_ROLLOUT_IN_PROGRESS' : 'ERR_ROLLOUT_STATE', `${what} needs a rollout that is ${allowed.join(' or ')}; it is ${state}`);
  };

  const page = async (rolloutId: string, list: List, cursor: string, limit: number) => {
    const items = await rolloutItems.listItems(sql, rolloutId, { status: LIST_STATUS[list] }, cursor, limit);
    return { ids: items.map((i) => i.sentinelId), notes: notesOf(items), nextCursor: items.length === limit ? items[items.length - 1]!.sentinelId : null };
  };

  const current = async (q: { list?: List; cursor?: string; limit: number }) => {
    const state = await stored();
    // A rollout saved before its sentinels were rows gets them at its next handler call.
    if (!state || !('waveSizes' in state)) return { state: (state as { state?: string } | undefined)?.state ?? 'idle' };
    if (q.list) return { list: q.list, ...(await page(state.rolloutId, q.list, q.cursor ?? '', q.limit)) };
    const counts = await rolloutItems.waveCounts(sql, state.rolloutId);
    const lists = await Promise.all(LISTS.map((l) => page(state.rolloutId, l, '', q.limit)));
    return {
      ...state,
      // The webhook URL is a credential: show where it points, not the secret path.
      slackWebhookUrl: state.slackWebhookUrl ? `${new URL(state.slackWebhookUrl).origin}/…` : undefined,
      waves: counts.map(({ wave, ...c }) => ({ index: wave, percentage: state.wavePercentages[wave], ...c })),
      succeededIds: lists[0]!.ids,
      failedIds: lists[1]!.ids,
      skippedIds: lists[2]!.ids,
      notes: { ...lists[1]!.notes, ...lists[2]!.notes },
      nextCursor: { succeeded: lists[0]!.nextCursor, failed: lists[1]!.nextCursor, skipped: lists[2]!.nextCursor },
    };
  };

  const fleet = (action?: string) => ({ config: { permission: 'rollouts.write' as const, unscoped: true, ...(action ? { action } : {}) } });
  const opts = (req: FastifyRequest) => ({ key: ROLLOUT_KEY, alongside: (tx: TxSql) => auditInTx(tx, req, { id: ROLLOUT_KEY }) });

  return (app: FastifyInstance) => {
    app.post('/v1/sentinel-rollouts', fleet('rollout.start'), async (req, reply) => {
      const body = parse(StartRolloutBody, req.body, 'body');
      const refused = sentinelImageRefusal(deps.sentinelImages ?? [], body.image);
      if (refused) throw refused;
      // The webhook is a URL of the caller's choosing that ctrl will POST to: only where the
      // outbound policy allows (checked again when each post is sent).
      const problem = body.slackWebhookUrl ? await destinationProblem(body.slackWebhookUrl, deps.outbound) : null;
      if (problem) throw validationError('invalid request body: slackWebhookUrl', [{ field: 'slackWebhookUrl', message: problem }]);
      await requireState(['idle', 'completed', 'cancelled'], 'rollout');
      const summary = await engine.call(def, 'rollout', body, opts(req));
      return reply.status(202).send(summary);
    });

    app.get('/v1/sentinel-rollouts/current', fleet(), async (req) => current(parse(RolloutCurrentQuery, req.query, 'query')));

    app.get('/v1/sentinel-rollouts/current/sentinels', fleet(), async (req) => {
      const q = parse(RolloutSentinelsQuery, req.query, 'query');
      const state = await stored();
      if (!state || !('waveSizes' in state)) return { sentinels: [], nextCursor: null };
      const items = await rolloutItems.listItems(sql, state.rolloutId, { status: q.status, wave: q.wave }, q.cursor ?? '', q.limit);
      return {
        sentinels: items.map((i) => ({ id: i.sentinelId, wave: i.wave, status: i.status, ...(i.reason ? { reason: i.reason } : {}), previousImage: i.previousImage })),
        nextCursor: items.length === q.limit ? items[items.length - 1]!.sentinelId : null,
      };
    });

    app.post('/v1/sentinel-rollouts/current/resume', fleet('rollout.resume'), async (req) => {
      await requireState(['paused'], 'resume');
      return engine.call(def, 'resume', {}, opts(req));
    });

    // Cancel queues behind a running wave (a wave is never cut mid-call), so it may take that
    // wave's time; ?wait=false returns 202 at once with the invocation id.
    app.post('/v1/sentinel-rollouts/current/cancel', fleet('rollout.cancel'), async (req, reply) => {
      const { wait } = parse(RolloutActionQuery, req.query, 'query');
      await requireState(['in_progress', 'paused'], 'cancel');
      if (wait === 'false') {
        const { id } = await engine.send(def, 'cancel', {}, opts(req));
        return reply.status(202).send({ invocationId: id });
      }
      return engine.call(def, 'cancel', {}, opts(req));
    });

    app.post('/v1/sentinel-rollouts/current/rollback', fleet('rollout.rollback'), async (req, reply) => {
      const { wait } = parse(RolloutActionQuery, req.query, 'query');
      await requireState(['paused', 'cancelled'], 'rollback');
      if (wait === 'false') {
        const { id } = await engine.send(def, 'rollbackAll', {}, opts(req));
        return reply.status(202).send({ invocationId: id });
      }
      return engine.call(def, 'rollbackAll', {}, opts(req));
    });
  };
}


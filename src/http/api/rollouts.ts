// /v1/sentinel-rollouts: start a fleet rollout, read the current one, resume / cancel / roll back.
// Fleet-wide: only an unscoped credential (the admin token) may call them. Each change's audit
// row commits with the workflow's start (the engine's `alongside`).
import type { FastifyInstance } from 'fastify';
import { AppError, validationError } from '../../errors';
import { destinationProblem, ROLLOUT_KEY, type OutboundPolicy, type RolloutState, type Workflows } from '../../workflow';
import type { Engine } from '../../workflow/engine';
import { StartRolloutBody, RolloutActionQuery } from './schemas';
import { parse } from './parse';
import { auditInTx } from '../audit';
import type { FastifyRequest } from 'fastify';
import type { TxSql } from '../../store';

export function rolloutRoutes(deps: { workflows: Workflows; engine: Engine; outbound: OutboundPolicy }) {
  const { engine } = deps;
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

  const current = async () => {
    const state = await stored();
    if (!state) return { state: 'idle' };
    return {
      ...state,
      // The webhook URL is a credential: show where it points, not the secret path.
      slackWebhookUrl: state.slackWebhookUrl ? `${new URL(state.slackWebhookUrl).origin}/…` : undefined,
      waves: state.waves.map((ids, i) => ({
        index: i,
        sentinels: ids.map((id) => ({ id, ...state.outcomes[id], previousImage: state.previousImages[id] })),
      })),
      outcomes: undefined,
    };
  };

  const fleet = (action?: string) => ({ config: { permission: 'rollouts.write' as const, unscoped: true, ...(action ? { action } : {}) } });
  const opts = (req: FastifyRequest) => ({ key: ROLLOUT_KEY, alongside: (tx: TxSql) => auditInTx(tx, req, { id: ROLLOUT_KEY }) });

  return (app: FastifyInstance) => {
    app.post('/v1/sentinel-rollouts', fleet('rollout.start'), async (req, reply) => {
      const body = parse(StartRolloutBody, req.body, 'body');
      // The webhook is a URL of the caller's choosing that ctrl will POST to: only where the
      // outbound policy allows (checked again when each post is sent).
      const problem = body.slackWebhookUrl ? await destinationProblem(body.slackWebhookUrl, deps.outbound) : null;
      if (problem) throw validationError('invalid request body: slackWebhookUrl', [{ field: 'slackWebhookUrl', message: problem }]);
      await requireState(['idle', 'completed', 'cancelled'], 'rollout');
      const summary = await engine.call(def, 'rollout', body, opts(req));
      return reply.status(202).send(summary);
    });

    app.get('/v1/sentinel-rollouts/current', fleet(), async () => current());

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


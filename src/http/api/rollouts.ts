// /v1/sentinel-rollouts: start a fleet rollout, read the current one, resume / cancel / roll back.
import type { FastifyInstance } from 'fastify';
import { conflict } from '../../errors';
import { ROLLOUT_KEY, type RolloutState, type Workflows } from '../../workflow';
import type { Engine } from '../../workflow/engine';
import { StartRolloutBody, RolloutActionQuery } from './schemas';
import { parse } from './parse';

/** Workflow refusals (wrong state, already running) are conflicts, not server errors. */
async function asConflict<T>(p: Promise<T>): Promise<T> {
  try {
    return await p;
  } catch (err) {
    const code = (err as { code?: string }).code;
    if (code === 'ERR_ROLLOUT_IN_PROGRESS' || code === 'ERR_ROLLOUT_STATE') throw conflict(code, (err as Error).message);
    throw err;
  }
}

export function rolloutRoutes(deps: { workflows: Workflows; engine: Engine }) {
  const { engine } = deps;
  const def = deps.workflows.rollout;

  const current = async () => {
    const state = (await engine.state(def, ROLLOUT_KEY)).rollout as RolloutState | undefined;
    if (!state) return { state: 'idle' };
    return {
      ...state,
      waves: state.waves.map((ids, i) => ({
        index: i,
        sentinels: ids.map((id) => ({ id, ...state.outcomes[id], previousImage: state.previousImages[id] })),
      })),
      outcomes: undefined,
    };
  };

  return (app: FastifyInstance) => {
    app.post('/v1/sentinel-rollouts', async (req, reply) => {
      const body = parse(StartRolloutBody, req.body, 'body');
      const summary = await asConflict(engine.call(def, 'rollout', body, { key: ROLLOUT_KEY }));
      return reply.status(202).send(summary);
    });

    app.get('/v1/sentinel-rollouts/current', async () => current());

    app.post('/v1/sentinel-rollouts/current/resume', async () => asConflict(engine.call(def, 'resume', {}, { key: ROLLOUT_KEY })));

    // Cancel queues behind a running wave (a wave is never cut mid-call), so it may take that
    // wave's time; ?wait=false returns 202 at once with the invocation id.
    app.post('/v1/sentinel-rollouts/current/cancel', async (req, reply) => {
      const { wait } = parse(RolloutActionQuery, req.query, 'query');
      if (wait === 'false') {
        const { id } = await engine.send(def, 'cancel', {}, { key: ROLLOUT_KEY });
        return reply.status(202).send({ invocationId: id });
      }
      return asConflict(engine.call(def, 'cancel', {}, { key: ROLLOUT_KEY }));
    });

    app.post('/v1/sentinel-rollouts/current/rollback', async (req, reply) => {
      const { wait } = parse(RolloutActionQuery, req.query, 'query');
      if (wait === 'false') {
        const { id } = await engine.send(def, 'rollbackAll', {}, { key: ROLLOUT_KEY });
        return reply.status(202).send({ invocationId: id });
      }
      return asConflict(engine.call(def, 'rollbackAll', {}, { key: ROLLOUT_KEY }));
    });
  };
}


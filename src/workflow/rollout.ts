// SentinelRolloutService: fleet-wide sentinel image rollouts in waves (seed 000), a virtual
// object keyed by the literal `singleton` with its whole lifecycle in K/V state `rollout`.
//
// Each wave runs in its own exclusive invocation (`runWave`) that sends the next one when it
// finishes. Between waves the key is free, so `cancel` (exclusive too) lands after the running
// wave and before the next: a wave is never interrupted mid-call, and no further wave starts.
// Re-entrancy is checked in `rollout` itself (the key lock alone would only queue a second
// call). Slack posts are one-way sends to SlackNotifier: in order, and never in the way.
// `completed` means every wave ran: a rollout resumed past a failed wave also ends completed,
// with the sentinels that failed listed in failedIds (and in the final Slack post).
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { defineObject, handler, TerminalError, type Context } from './engine';
import { events, sentinels, type Sql } from '../store';
import type { SentinelServiceDef } from './sentinel';
import type { SlackNotifierDef } from './slack';
import type { RolloutRegions } from './rollout-regions';
import { computeWaves, DEFAULT_WAVE_PERCENTAGES, wavePercentageProblems } from './waves';
import { annotate, fail, planSpan } from '../tracing';

export const ROLLOUT_SERVICE = 'SentinelRolloutService';
export const ROLLOUT_KEY = 'singleton';
const STATE = 'rollout';
/** The rollout's field that holds a credential (in its input and its state alike). */
const SECRET_FIELD = 'slackWebhookUrl';

export const ROLLOUT_STATES = ['idle', 'in_progress', 'paused', 'rolling_back', 'cancelled', 'completed'] as const;
export type RolloutStateName = (typeof ROLLOUT_STATES)[number];
const TERMINAL: readonly RolloutStateName[] = ['idle', 'completed', 'cancelled'];

export interface SentinelOutcome {
  wave: number;
  status: 'pending' | 'READY' | 'FAILED' | 'SKIPPED';
  reason?: string;
}

export interface RolloutState {
  rolloutId: string;
  state: RolloutStateName;
  image: string;
  wavePercentages: number[];
  waves: string[][];
  /** Index of the wave running or next to run. */
  currentWave: number;
  previousImages: Record<string, string>;
  succeededIds: string[];
  failedIds: string[];
  /** Sentinels of regions offline when their wave started (reason in outcomes); absent in states saved before. */
  skippedIds?: string[];
  outcomes: Record<string, SentinelOutcome>;
  skipped: number;
  slackWebhookUrl?: string;
  reverted?: number;
  startedAt: string;
  updatedAt: string;
}

export const RolloutInput = z.object({
  image: z.string().min(1),
  wavePercentages: z
    .array(z.number())
    .optional()
    .superRefine((p, ctx) => {
      for (const m of p ? wavePercentageProblems(p) : []) ctx.addIssue({ code: 'custom', message: m });
    }),
  slackWebhookUrl: z.url().optional(),
});
export type RolloutInput = z.infer<typeof RolloutInput>;

const Summary = z.object({ state: z.enum(ROLLOUT_STATES), rolloutId: z.string().nullable(), waves: z.array(z.number()), reverted: z.number().optional() });
type Summary = z.infer<typeof Summary>;

/** Sentinels listed per query while planning: bounded memory and statement time. */
const PAGE = 500;

export interface RolloutDeps {
  sql: Sql;
  sentinel: SentinelServiceDef;
  slack: SlackNotifierDef;
  /** Offline regions' sentinels are skipped; RollbackAll also reverts failed ones (rollout-regions.ts). */
  regions?: RolloutRegions;
}

const summary = (s: RolloutState | undefined): Summary => ({
  state: s?.state ?? 'idle',
  rolloutId: s?.rolloutId ?? null,
  waves: s?.waves.map((w) => w.length) ?? [],
  ...(s?.reverted !== undefined ? { reverted: s.reverted } : {}),
});

// A factory over 80 lines: the object's handlers (define) share save/notify/load over the deps;
// each handler is short, and the handlers of one virtual object read best side by side.
export function rolloutService(deps: RolloutDeps) {
  let def: ReturnType<typeof define>;

  async function save(ctx: Context, s: RolloutState, waveForEvent = s.currentWave): Promise<void> {
    const now = await ctx.run('now', () => new Date().toISOString());
    s.updatedAt = now;
    await ctx.set(STATE, s);
    // Live events are notification only: a failure to publish must not fail the wave.
    await ctx.run('event', async () => {
      await events
        .publishEvent(deps.sql, {
          type: 'rollout.wave',
          state: s.state,
          wave: waveForEvent,
          waves: s.waves.length,
          succeeded: s.succeededIds.length,
          failed: s.failedIds.length,
        })
        .catch(() => {});
      return null;
    });
  }

  async function notify(ctx: Context, s: RolloutState, text: string): Promise<void> {
    // The webhook URL is a credential: the object key (visible in /v1/invocations) is its hash.
    if (s.slackWebhookUrl) {
      const key = createHash('sha256').update(s.slackWebhookUrl).digest('hex').slice(0, 16);
      await ctx.send(deps.slack, 'post', { url: s.slackWebhookUrl, text: `[sentinel rollout ${s.image}] ${text}` }, { key });
    }
  }

  async function load(ctx: Context): Promise<RolloutState | undefined> {
    return ctx.get<RolloutState>(STATE);
  }

  // Over 80 lines: the object definition, one short handler per entry (rollout, resume,
  // cancel, rollbackAll, reads), kept together as the engine registers them.
  function define() {
    return defineObject(ROLLOUT_SERVICE, {
      exclusive: {
        rollout: handler({ input: RolloutInput, output: Summary, secret: { input: [SECRET_FIELD] } }, async (ctx, input) => {
          const current = await load(ctx);
          if (current && !TERMINAL.includes(current.state)) {
            throw new TerminalError(`a rollout is ${current.state} (image ${current.image}); resume, cancel or roll it back first`, { code: 'ERR_ROLLOUT_IN_PROGRESS' });
          }
          const percentages = input.wavePercentages ?? [...DEFAULT_WAVE_PERCENTAGES];
          const fleet = await ctx.run('list-sentinels', async () => {
            const out: { id: string; image: string }[] = [];
            for (let after = ''; ; ) {
              const page = await sentinels.listSentinels(deps.sql, { desiredState: 'running', after, limit: PAGE });
              out.push(...page.map((s) => ({ id: s.id, image: s.image })));
              if (page.length < PAGE) break;
              after = page[page.length - 1]!.id;
            }
            return out;
          });
          const todo = fleet.filter((s) => s.image !== input.image);
          const startedAt = await ctx.run('started-at', () => new Date().toISOString());
          const s: RolloutState = {
            rolloutId: ctx.invocationId,
            state: todo.length ? 'in_progress' : 'completed',
            image: input.image,
            wavePercentages: percentages,
            waves: computeWaves(todo.map((t) => t.id), percentages),
            currentWave: 0,
            previousImages: Object.fromEntries(todo.map((t) => [t.id, t.image])),
            succeededIds: [],
            failedIds: [],
            skippedIds: [],
            outcomes: Object.fromEntries(todo.map((t) => [t.id, { wave: -1, status: 'pending' as const }])),
            skipped: fleet.length - todo.length,
            ...(input.slackWebhookUrl ? { slackWebhookUrl: input.slackWebhookUrl } : {}),
            startedAt,
            updatedAt: startedAt,
          };
          s.waves.forEach((w, i) => w.forEach((id) => (s.outcomes[id]!.wave = i)));
          await save(ctx, s);
          await notify(ctx, s, `started: ${todo.length} sentinels in ${s.waves.length} waves (${s.skipped} already on the image)`);
          if (s.state === 'completed') await notify(ctx, s, 'completed: nothing to update');
          else await sendWave(ctx, s.rolloutId);
          return summary(s);
        }),

        runWave: handler({ input: z.object({ rolloutId: z.string() }), output: Summary }, async (ctx, { rolloutId }) => {
          const s = await load(ctx);
          // A wave of an older rollout, or one made moot by cancel/pause, does nothing.
          if (!s || s.rolloutId !== rolloutId || s.state !== 'in_progress') return summary(s);
          const wave = s.waves[s.currentWave];
          if (!wave) {
            s.state = 'completed';
            await save(ctx, s);
            await notify(ctx, s, `completed: ${s.succeededIds.length} updated, ${s.failedIds.length} failed, ${s.skippedIds?.length ?? 0} skipped (offline regions)`);
            return summary(s);
          }
          const n = s.currentWave + 1;
          annotate({ 'rollout.id': rolloutId, 'rollout.wave': n, 'rollout.waves': s.waves.length, 'rollout.image': s.image, 'rollout.sentinels': wave.length });
          await notify(ctx, s, `wave ${n}/${s.waves.length} started: ${wave.length} sentinels`);
          // allSettled: a sentinel call that errors (not just FAILED) is one failed sentinel,
          // never a failed wave invocation that would leave the rollout in_progress forever.
          // Sentinels of regions offline as the wave starts are skipped, not waited for; a later
          // rollout to the same image picks them up (they are still on the old one).
          const offline = deps.regions ? await ctx.run('offline-sentinels', () => deps.regions!.offlineSentinels(wave)) : {};
          const live = wave.filter((id) => !offline[id]);
          for (const [id, reason] of Object.entries(offline)) {
            (s.skippedIds ??= []).push(id);
            s.outcomes[id] = { wave: s.currentWave, status: 'SKIPPED', reason };
          }
          const results = await ctx.allSettled(
            live.map((id) => planSpan('sentinel.deploy', { 'sentinel.id': id, 'rollout.wave': n }, () => ctx.call(deps.sentinel, 'deploy', { image: s.image }, { key: id }))),
          );
          const failed: string[] = [];
          results.forEach((r, i) => {
            const id = live[i]!;
            if (r.status === 'fulfilled' && r.value.status === 'READY') {
              s.succeededIds.push(id);
              s.outcomes[id] = { wave: s.currentWave, status: 'READY' };
            } else {
              failed.push(id);
              const reason = r.status === 'fulfilled' ? (r.value.reason ?? 'failed') : (r.reason as Error).message;
              s.outcomes[id] = { wave: s.currentWave, status: 'FAILED', reason };
            }
          });
          s.failedIds.push(...failed);
          if (failed.length) {
            fail(`${failed.length} of ${wave.length} sentinels failed`);
            s.state = 'paused';
            await save(ctx, s);
            await notify(ctx, s, `paused in wave ${n}: ${failed.length} failed (${failed.join(', ')})`);
            return summary(s);
          }
          const skippedNow = Object.keys(offline);
          await notify(ctx, s, `wave ${n}/${s.waves.length} completed${skippedNow.length ? `, ${skippedNow.length} skipped in offline regions (${skippedNow.join(', ')})` : ''}`);
          s.currentWave++;
          await save(ctx, s, s.currentWave - 1);
          await sendWave(ctx, rolloutId);
          return summary(s);
        }),

        resume: handler({ input: z.object({}).default({}), output: Summary }, async (ctx) => {
          const s = await load(ctx);
          if (s?.state !== 'paused') throw new TerminalError(`resume needs a paused rollout; it is ${s?.state ?? 'idle'}`, { code: 'ERR_ROLLOUT_STATE' });
          // Skip the failed wave; its failed sentinels are not retried (seed 000).
          s.currentWave++;
          s.state = 'in_progress';
          await save(ctx, s);
          await notify(ctx, s, `resumed at wave ${s.currentWave + 1}/${s.waves.length}`);
          await sendWave(ctx, s.rolloutId);
          return summary(s);
        }),

        cancel: handler({ input: z.object({}).default({}), output: Summary }, async (ctx) => {
          const s = await load(ctx);
          if (s?.state !== 'in_progress' && s?.state !== 'paused') {
            throw new TerminalError(`cancel needs a rollout in progress or paused; it is ${s?.state ?? 'idle'}`, { code: 'ERR_ROLLOUT_STATE' });
          }
          s.state = 'cancelled';
          await save(ctx, s);
          await notify(ctx, s, `cancelled: ${s.succeededIds.length} sentinels keep the new image`);
          return summary(s);
        }),

        rollbackAll: handler({ input: z.object({}).default({}), output: Summary }, async (ctx) => {
          const s = await load(ctx);
          if (s?.state !== 'paused' && s?.state !== 'cancelled') {
            throw new TerminalError(`rollback needs a paused or cancelled rollout; it is ${s?.state ?? 'idle'}`, { code: 'ERR_ROLLOUT_STATE' });
          }
          s.state = 'rolling_back';
          await save(ctx, s);
          await notify(ctx, s, `rollback started: ${s.succeededIds.length} sentinels`);
          // Sentinels that reached the new image go back, and so do failed ones whose new image
          // was written (they may run it, or keep trying to); skipped ones never got it.
          const written = deps.regions ? await ctx.run('failed-written', () => deps.regions!.written(s.failedIds, s.image)) : [];
          const ids = [...s.succeededIds, ...written];
          const results = await ctx.allSettled(ids.map((id) => ctx.call(deps.sentinel, 'deploy', { image: s.previousImages[id]! }, { key: id })));
          s.reverted = results.filter((r) => r.status === 'fulfilled' && r.value.status === 'READY').length;
          s.state = 'cancelled';
          await save(ctx, s);
          await notify(ctx, s, `rollback completed: ${s.reverted}/${ids.length} reverted`);
          return summary(s);
        }),
      },
      shared: {
        status: handler({ input: z.object({}).default({}), output: z.unknown(), secret: { output: [SECRET_FIELD] } }, async (ctx) => (await load(ctx)) ?? { state: 'idle' }),
      },
    },
    // The webhook URL is a credential: invocation views show it nowhere (input, state, status).
    { secretState: { [STATE]: [SECRET_FIELD] } },
    );
  }

  /** Each wave is an invocation of its own and so the durable span rollout.wave (a child of
   *  whatever scheduled it: the start, the previous wave, a resume). */
  function sendWave(ctx: Context, rolloutId: string) {
    return planSpan('rollout.wave', { 'rollout.id': rolloutId }, () => ctx.send(def, 'runWave', { rolloutId }, { key: ROLLOUT_KEY }));
  }

  def = define();
  return def;
}

export type RolloutServiceDef = ReturnType<typeof rolloutService>;

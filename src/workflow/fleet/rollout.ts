// SentinelRolloutService: fleet-wide sentinel image rollouts in waves (seed 000), a virtual
// object keyed by the literal `singleton`. Its K/V state `rollout` holds the rollout's shape and
// counts only; each sentinel's wave, outcome and previous image is a row of
// sentinel_rollout_items (src/store/rollout-items.ts), written in the rollout's journaled
// transactions. So the state, each save and the API's answer stay the same size whether the
// fleet has ten sentinels or ten thousand (issue 28).
//
// Each wave runs in its own exclusive invocation (`runWave`) that sends the next one when it
// finishes. Between waves the key is free, so `cancel` (exclusive too) lands after the running
// wave and before the next: a wave is never interrupted mid-call, and no further wave starts.
// A wave calls its sentinels a page at a time (PAGE_SIZE in flight), each page one journaled
// read, the calls, and one journaled write of their outcomes. Re-entrancy is checked in
// `rollout` itself (the key lock alone would only queue a second call). Slack posts are one-way
// sends to SlackNotifier: in order, and never in the way.
// `completed` means every wave ran: a rollout resumed past a failed wave also ends completed,
// with the sentinels that failed listed as failed (and counted in the final Slack post).
import { createHash } from 'node:crypto';
import { z } from 'zod';
import { defineObject, handler, TerminalError, type Context } from '../engine';
import { events, rolloutItems, type Sql } from '../../store';
import type { SentinelServiceDef } from './sentinel';
import type { SlackNotifierDef } from './slack';
import type { RolloutRegions } from './rollout-regions';
import { DEFAULT_WAVE_PERCENTAGES, wavePercentageProblems } from './waves';
import { annotate, fail, planSpan } from '../../tracing';

export const ROLLOUT_SERVICE = 'SentinelRolloutService';
export const ROLLOUT_KEY = 'singleton';
const STATE = 'rollout';
/** The rollout's field that holds a credential (in its input and its state alike). */
const SECRET_FIELD = 'slackWebhookUrl';

export const ROLLOUT_STATES = ['idle', 'in_progress', 'paused', 'rolling_back', 'cancelled', 'completed'] as const;
export type RolloutStateName = (typeof ROLLOUT_STATES)[number];
const TERMINAL: readonly RolloutStateName[] = ['idle', 'completed', 'cancelled'];

export interface RolloutState {
  rolloutId: string;
  state: RolloutStateName;
  image: string;
  wavePercentages: number[];
  /** How many sentinels each wave holds (the rows say which). */
  waveSizes: number[];
  /** Index of the wave running or next to run. */
  currentWave: number;
  succeeded: number;
  failed: number;
  /** Sentinels of regions offline when their wave started (reason in their rows). */
  skippedOffline: number;
  /** Running sentinels already on the image when the rollout started. */
  skipped: number;
  slackWebhookUrl?: string;
  reverted?: number;
  startedAt: string;
  updatedAt: string;
}

/** The state as rollouts saved it before sentinel_rollout_items: every id in the state. */
interface LegacyState extends Omit<RolloutState, 'waveSizes' | 'succeeded' | 'failed' | 'skippedOffline'> {
  waves: string[][];
  previousImages: Record<string, string>;
  succeededIds: string[];
  failedIds: string[];
  skippedIds?: string[];
  outcomes: Record<string, { wave: number; status: 'pending' | 'READY' | 'FAILED' | 'SKIPPED'; reason?: string }>;
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

/**
 * Sentinel calls a wave (or a rollback) has in flight at once, and rows read per page: bounds
 * ctrl's memory and one journal entry's size at any fleet size. A page waits for its slowest
 * sentinel, which argues for large pages; but with 10,000 sentinels 500 was no slower than
 * 1,000 (100 s against 104 s, one run each) and parked fewer executions at once in ctrl (peak
 * RSS 533 against 548 MiB).
 */
export const PAGE_SIZE = 500;

export interface RolloutDeps {
  sql: Sql;
  sentinel: SentinelServiceDef;
  slack: SlackNotifierDef;
  /** Offline regions' sentinels are skipped (rollout-regions.ts). */
  regions?: RolloutRegions;
}

const summary = (s: RolloutState | undefined): Summary => ({
  state: s?.state ?? 'idle',
  rolloutId: s?.rolloutId ?? null,
  waves: s?.waveSizes ?? [],
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
          waves: s.waveSizes.length,
          succeeded: s.succeeded,
          failed: s.failed,
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
    const s = await ctx.get<RolloutState | LegacyState>(STATE);
    return s && 'waves' in s ? upgrade(ctx, s) : s;
  }

  /** A rollout saved with every id in its state: its rows written once, its state made counts. */
  async function upgrade(ctx: Context, old: LegacyState): Promise<RolloutState> {
    const { waves, previousImages, succeededIds, failedIds, skippedIds, outcomes, ...rest } = old;
    await ctx.runTx('legacy-items', async (tx) => {
      const items = waves.flatMap((ids, wave) =>
        ids.map((id) => ({ sentinelId: id, wave, status: outcomes[id]?.status ?? ('pending' as const), reason: outcomes[id]?.reason ?? null, previousImage: previousImages[id] ?? '' })),
      );
      await rolloutItems.insertItems(tx, old.rolloutId, items);
      return null;
    });
    const s: RolloutState = { ...rest, waveSizes: waves.map((w) => w.length), succeeded: succeededIds.length, failed: failedIds.length, skippedOffline: skippedIds?.length ?? 0 };
    await ctx.set(STATE, s);
    return s;
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
          const rolloutId = ctx.invocationId;
          // The plan is rows, written with this step's journal entry: a replay reads its sizes.
          const plan = await ctx.runTx('plan', (tx) => rolloutItems.planRollout(tx, rolloutId, input.image, percentages));
          const todo = plan.waveSizes.reduce((a, b) => a + b, 0);
          const startedAt = await ctx.run('started-at', () => new Date().toISOString());
          const s: RolloutState = {
            rolloutId,
            state: todo ? 'in_progress' : 'completed',
            image: input.image,
            wavePercentages: percentages,
            waveSizes: plan.waveSizes,
            currentWave: 0,
            succeeded: 0,
            failed: 0,
            skippedOffline: 0,
            skipped: plan.alreadyOnImage,
            ...(input.slackWebhookUrl ? { slackWebhookUrl: input.slackWebhookUrl } : {}),
            startedAt,
            updatedAt: startedAt,
          };
          await save(ctx, s);
          await notify(ctx, s, `started: ${todo} sentinels in ${s.waveSizes.length} waves (${s.skipped} already on the image)`);
          if (s.state === 'completed') await notify(ctx, s, 'completed: nothing to update');
          else await sendWave(ctx, s.rolloutId);
          return summary(s);
        }),

        runWave: handler({ input: z.object({ rolloutId: z.string() }), output: Summary }, async (ctx, { rolloutId }) => {
          const s = await load(ctx);
          // A wave of an older rollout, or one made moot by cancel/pause, does nothing.
          if (!s || s.rolloutId !== rolloutId || s.state !== 'in_progress') return summary(s);
          const size = s.waveSizes[s.currentWave];
          if (size === undefined) {
            s.state = 'completed';
            await save(ctx, s);
            await notify(ctx, s, `completed: ${s.succeeded} updated, ${s.failed} failed, ${s.skippedOffline} skipped (offline regions)`);
            return summary(s);
          }
          const n = s.currentWave + 1;
          annotate({ 'rollout.id': rolloutId, 'rollout.wave': n, 'rollout.waves': s.waveSizes.length, 'rollout.image': s.image, 'rollout.sentinels': size });
          await notify(ctx, s, `wave ${n}/${s.waveSizes.length} started: ${size} sentinels`);
          const r = await runWavePages(ctx, s);
          s.succeeded += r.succeeded;
          s.failed += r.failed.length;
          s.skippedOffline += r.skipped.length;
          if (r.failed.length) {
            fail(`${r.failed.length} of ${size} sentinels failed`);
            s.state = 'paused';
            await save(ctx, s);
            await notify(ctx, s, `paused in wave ${n}: ${r.failed.length} failed (${sample(r.failed)})`);
            return summary(s);
          }
          await notify(ctx, s, `wave ${n}/${s.waveSizes.length} completed${r.skipped.length ? `, ${r.skipped.length} skipped in offline regions (${sample(r.skipped)})` : ''}`);
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
          await notify(ctx, s, `resumed at wave ${s.currentWave + 1}/${s.waveSizes.length}`);
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
          await notify(ctx, s, `cancelled: ${s.succeeded} sentinels keep the new image`);
          return summary(s);
        }),

        rollbackAll: handler({ input: z.object({}).default({}), output: Summary }, async (ctx) => {
          const s = await load(ctx);
          if (s?.state !== 'paused' && s?.state !== 'cancelled') {
            throw new TerminalError(`rollback needs a paused or cancelled rollout; it is ${s?.state ?? 'idle'}`, { code: 'ERR_ROLLOUT_STATE' });
          }
          s.state = 'rolling_back';
          await save(ctx, s);
          await notify(ctx, s, `rollback started: ${s.succeeded} sentinels`);
          const r = await revertPages(ctx, s);
          s.reverted = r.reverted;
          s.state = 'cancelled';
          await save(ctx, s);
          await notify(ctx, s, `rollback completed: ${r.reverted}/${r.total} reverted`);
          return summary(s);
        }),
      },
      shared: {
        status: handler({ input: z.object({}).default({}), output: z.unknown(), secret: { output: [SECRET_FIELD] } }, async (ctx) => (await ctx.get(STATE)) ?? { state: 'idle' }),
      },
    },
    // The webhook URL is a credential: invocation views show it nowhere (input, state, status).
    { secretState: { [STATE]: [SECRET_FIELD] } },
    );
  }

  /**
   * Calls the current wave's sentinels a page at a time and records each page's outcomes with
   * its journal entry. allSettled: a sentinel call that errors (not just FAILED) is one failed
   * sentinel, never a failed wave invocation that would leave the rollout in_progress forever.
   * Sentinels of regions offline as their page starts are skipped, not waited for; a later
   * rollout to the same image picks them up (they are still on the old one).
   */
  async function runWavePages(ctx: Context, s: RolloutState): Promise<{ succeeded: number; failed: string[]; skipped: string[] }> {
    const wave = s.currentWave;
    const out = { succeeded: 0, failed: [] as string[], skipped: [] as string[] };
    for (let p = 0; ; p++) {
      const ids = await ctx.run(`wave-page-${p}`, () => rolloutItems.pendingInWave(deps.sql, s.rolloutId, wave, PAGE_SIZE));
      if (ids.length === 0) return out;
      const offline = deps.regions ? await ctx.run(`offline-sentinels-${p}`, () => deps.regions!.offlineSentinels(ids)) : {};
      const live = ids.filter((id) => !offline[id]);
      const results = await ctx.allSettled(
        live.map((id) => planSpan('sentinel.deploy', { 'sentinel.id': id, 'rollout.wave': wave + 1 }, () => ctx.call(deps.sentinel, 'deploy', { image: s.image }, { key: id }))),
      );
      const outcomes: { id: string; status: 'READY' | 'FAILED' | 'SKIPPED'; reason: string | null }[] = Object.entries(offline).map(([id, reason]) => ({ id, status: 'SKIPPED', reason }));
      results.forEach((r, i) => {
        const id = live[i]!;
        if (r.status === 'fulfilled' && r.value.status === 'READY') outcomes.push({ id, status: 'READY', reason: null });
        else outcomes.push({ id, status: 'FAILED', reason: r.status === 'fulfilled' ? (r.value.reason ?? 'failed') : (r.reason as Error).message });
      });
      await ctx.runTx(`wave-record-${p}`, async (tx) => {
        await rolloutItems.recordOutcomes(tx, s.rolloutId, outcomes);
        return null;
      });
      for (const o of outcomes) {
        if (o.status === 'READY') out.succeeded++;
        else (o.status === 'FAILED' ? out.failed : out.skipped).push(o.id);
      }
    }
  }

  /** Sends every sentinel that reached the image (or had it written) back to its previous image, a page at a time. */
  async function revertPages(ctx: Context, s: RolloutState): Promise<{ reverted: number; total: number }> {
    let reverted = 0;
    let total = 0;
    for (let p = 0; ; p++) {
      const page = await ctx.run(`revert-page-${p}`, () => rolloutItems.toRevert(deps.sql, s.rolloutId, s.image, PAGE_SIZE));
      if (page.length === 0) return { reverted, total };
      const results = await ctx.allSettled(page.map((x) => ctx.call(deps.sentinel, 'deploy', { image: x.previousImage }, { key: x.id })));
      await ctx.runTx(`revert-record-${p}`, async (tx) => {
        await rolloutItems.markReverted(tx, s.rolloutId, page.map((x) => x.id));
        return null;
      });
      reverted += results.filter((r) => r.status === 'fulfilled' && r.value.status === 'READY').length;
      total += page.length;
    }
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

/** Slack lines name at most this many sentinels; the API pages the rest. */
const SAMPLE = 10;
const sample = (ids: readonly string[]) => (ids.length > SAMPLE ? `${ids.slice(0, SAMPLE).join(', ')} and ${ids.length - SAMPLE} more` : ids.join(', '));

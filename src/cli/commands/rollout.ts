// `unkey-infra rollout start|status|resume|cancel|rollback`: fleet-wide sentinel image
// rollouts (SentinelRolloutService). `status --watch` follows the rollout live: every
// `rollout.wave` event triggers a fresh read (a periodic read backs the socket up, and a lost
// socket is said once on stderr), and the per-wave view is redrawn in place on a terminal,
// appended when it changed otherwise.
import { CliError, EXIT_FAILED, EXIT_OK } from '../errors';
import type { RolloutCurrent, RolloutView } from '../api.gen';
import type { CommandContext } from './context';
import { fallbackNotice } from './follow';
import { openLive } from '../live';
import { DEFAULT_WATCH } from '../watch';
import type { JsonFlag } from './deployments';

/** The current rollout without ?list= (the API answers one outcome's page only when asked). */
function asView(r: RolloutCurrent): RolloutView {
  if ('state' in r) return r;
  throw new CliError('ERR_CLI_BAD_RESPONSE', 'ctrl answered the current rollout with a page of ids');
}

/** Backstop re-read while watching, in case an event was missed (ctx.watch.pollMs overrides). */
const WATCH_POLL_MS = 2_000;
const ACTIVE = new Set(['in_progress', 'rolling_back']);
/** Sentinels named per wave line; the rest are counted (the API pages them all). */
const NAMED = 10;

/** Pure: "id (reason), …" for the listed sentinels of one wave, the rest as "and N more". */
function named(ids: readonly string[], notes: RolloutView['notes'], wave: number, count: number): string {
  const here = ids.filter((id) => notes?.[id]?.wave === wave);
  const shown = here.slice(0, NAMED).map((id) => `${id}${notes?.[id]?.reason ? ` (${notes[id]!.reason})` : ''}`);
  return shown.join(', ') + (count > shown.length ? `${shown.length ? ' and ' : ''}${count - shown.length} more` : '');
}

/** Pure: the per-wave view of a rollout. */
export function renderRollout(r: RolloutView): string {
  if (r.state === 'idle' || !r.waves) return 'no rollout has run yet\n';
  const lines = [
    `rollout to ${r.image}: ${r.state}` +
      (r.waves.length ? `  wave ${Math.min((r.currentWave ?? 0) + 1, r.waves.length)}/${r.waves.length}` : '') +
      `  succeeded ${r.succeeded ?? 0}  failed ${r.failed ?? 0}` +
      (r.skipped ? `  already on image ${r.skipped}` : '') +
      (r.skippedOffline ? `  skipped (offline regions) ${r.skippedOffline}` : '') +
      (r.reverted !== undefined ? `  reverted ${r.reverted}` : ''),
  ];
  for (const w of r.waves) {
    const bar = '#'.repeat(Math.round((w.succeeded / Math.max(1, w.total)) * 20)).padEnd(20, '.');
    lines.push(
      `  wave ${String(w.index + 1).padEnd(3)} [${bar}] ${w.succeeded}/${w.total} ready` +
        (w.failed ? `  ${w.failed} failed: ${named(r.failedIds ?? [], r.notes, w.index, w.failed)}` : '') +
        (w.skipped ? `  ${w.skipped} skipped: ${named(r.skippedIds ?? [], r.notes, w.index, w.skipped)}` : '') +
        (w.pending && w.pending < w.total ? `  ${w.pending} pending` : ''),
    );
  }
  return `${lines.join('\n')}\n`;
}

export async function rolloutStart(o: JsonFlag & { image: string; waves?: number[]; slackWebhook?: string }, ctx: CommandContext): Promise<number> {
  const client = await ctx.client(o);
  const r = await client.post('/v1/sentinel-rollouts', {
    body: { image: o.image, ...(o.waves ? { wavePercentages: o.waves } : {}), ...(o.slackWebhook ? { slackWebhookUrl: o.slackWebhook } : {}) },
  });
  if (o.json) ctx.io.out(`${JSON.stringify(r, null, 2)}\n`);
  else {
    const total = r.waves.reduce((a, b) => a + b, 0);
    ctx.io.out(`rollout to ${o.image}: ${r.state}, ${total} sentinels in ${r.waves.length} waves (${r.waves.join(', ')})\n`);
  }
  return EXIT_OK;
}

export async function rolloutStatus(o: JsonFlag & { watch?: boolean }, ctx: CommandContext): Promise<number> {
  const client = await ctx.client(o);
  const read = async () => asView(await client.get('/v1/sentinel-rollouts/current'));
  let r = await read();
  if (!o.watch || !ACTIVE.has(r.state)) {
    ctx.io.out(o.json ? `${JSON.stringify(r, null, 2)}\n` : renderRollout(r));
    return r.state === 'paused' ? EXIT_FAILED : EXIT_OK;
  }
  let drawn = '';
  const draw = () => {
    const text = o.json ? `${JSON.stringify(r)}\n` : renderRollout(r);
    if (text === drawn) return;
    if (ctx.io.isTTY && drawn && !o.json) ctx.io.control(`\x1b[${drawn.split('\n').length - 1}A\x1b[J`);
    ctx.io.out(text);
    drawn = text;
  };
  draw();
  const pollMs = ctx.watch.pollMs ?? WATCH_POLL_MS;
  // Every rollout.wave event wakes the loop at once; the timer backs a lost socket up. One
  // listener for the whole watch: a listener per wait would pile up while waves run quietly.
  let wake: (() => void) | undefined;
  // An event that arrives while a read is in flight may be newer than that read: read again.
  let missed = false;
  const socket = openLive(client, { type: 'rollout' }, ctx.watch.helloTimeoutMs ?? DEFAULT_WATCH.helloTimeoutMs, {
    onEvent: () => (wake ? wake() : (missed = true)),
    onLost: (reason) => ctx.io.err(fallbackNotice(reason, pollMs)),
  });
  try {
    // Until the rollout stops rolling, or the user interrupts.
    ctx.signal.addEventListener('abort', () => wake?.(), { once: true });
    while (ACTIVE.has(r.state) && !ctx.signal.aborted) {
      if (!missed) {
        await new Promise<void>((resolve) => {
          const timer = setTimeout(() => wake!(), pollMs);
          wake = () => {
            clearTimeout(timer);
            wake = undefined;
            resolve();
          };
        });
      }
      if (ctx.signal.aborted) break;
      missed = false;
      r = await read();
      draw();
    }
  } finally {
    socket.close();
  }
  return r.state === 'paused' ? EXIT_FAILED : EXIT_OK;
}

export async function rolloutAction(action: 'resume' | 'cancel' | 'rollback', o: JsonFlag, ctx: CommandContext): Promise<number> {
  const client = await ctx.client(o);
  // Cancel waits for the running wave and rollback for every revert: no client-side timeout.
  const r = await client.post(`/v1/sentinel-rollouts/current/${action}`, { timeoutMs: 0 });
  if (o.json) ctx.io.out(`${JSON.stringify(r, null, 2)}\n`);
  else ctx.io.out(`rollout ${action}: ${r.state}${r.reverted !== undefined ? `, ${r.reverted} sentinels reverted` : ''}\n`);
  return EXIT_OK;
}

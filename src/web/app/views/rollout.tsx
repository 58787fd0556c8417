/** @jsxRuntime automatic */
/** @jsxImportSource preact */
// The fleet rollout of sentinels: its waves as progress bars, which sentinels succeeded, failed
// or were skipped (with reasons), and resume/cancel/rollback offered only in the states the API
// accepts them. A form starts a new rollout when none is running. Refreshed on `rollout.wave`
// and `sentinel.status` events.
import { useState } from 'preact/hooks';
import type { ApiError } from '../api';
import { timestamp } from '../format';
import { useDebounced, useEvents, useResource, useSession } from '../hooks';
import { allowedIn, failedOf, parseWaves, rolloutActions, skippedOf, waveProgress, type RolloutAction, type WaveProgress } from '../models/rollout';
import type { RolloutView as Rollout } from '../../../cli/api.gen';
import { ActionButton, Badge, ErrorBox, Loading, Outcome } from './common';
import { SentinelsPanel } from './sentinels';

export function Waves({ waves }: { waves: WaveProgress[] }) {
  if (waves.length === 0) return <p class="muted">No waves.</p>;
  return (
    <ol class="waves" data-testid="waves">
      {waves.map((w) => (
        <li key={w.index} data-wave={w.index} data-phase={w.phase} class={`wave ph-${w.phase}`}>
          <span class="wave-name">
            Wave {w.index + 1}
            {w.percentage !== undefined && <small class="muted"> (to {w.percentage}%)</small>}
          </span>
          <progress max={Math.max(1, w.total)} value={w.succeeded + w.failed + w.skipped} aria-label={`wave ${w.index + 1} progress`} />
          <span class="wave-counts">
            {w.succeeded}/{w.total} ready
            {w.failed > 0 && <strong class="bad"> · {w.failed} failed</strong>}
            {w.skipped > 0 && <span> · {w.skipped} skipped</span>} · <Badge status={w.phase} />
          </span>
        </li>
      ))}
    </ol>
  );
}

/** A list of sentinels the API gave (its first page); `total` counts them all. */
function IdList({ title, items, total, testid }: { title: string; items: { id: string; reason?: string | undefined }[]; total: number; testid: string }) {
  if (items.length === 0) return null;
  return (
    <div class="idlist" data-testid={testid}>
      <h3>
        {title} ({total}){total > items.length ? `, first ${items.length} shown` : ''}
      </h3>
      <ul>
        {items.map((i) => (
          <li key={i.id}>
            <span class="mono">{i.id}</span>
            {i.reason && <span class="muted">: {i.reason}</span>}
          </li>
        ))}
      </ul>
    </div>
  );
}

const QUESTIONS: Record<Exclude<RolloutAction, 'start'>, { label: string; title: string; body: string; path: string; done: string }> = {
  resume: { label: 'Resume', title: 'Resume the rollout?', body: 'The next wave starts; sentinels that failed stay as they are.', path: 'resume', done: 'Resumed.' },
  cancel: { label: 'Cancel', title: 'Cancel the rollout?', body: 'No further wave starts (a running wave finishes first). Updated sentinels keep the new image.', path: 'cancel?wait=false', done: 'Cancel requested.' },
  rollback: { label: 'Roll back', title: 'Roll the fleet back?', body: 'Every sentinel this rollout updated goes back to its previous image.', path: 'rollback?wait=false', done: 'Rollback requested.' },
};

function Actions({ r, onChanged }: { r: Rollout; onChanged(): void }) {
  const { api } = useSession();
  const [error, setError] = useState<ApiError | null>(null);
  const [message, setMessage] = useState<string | null>(null);
  const allowed = rolloutActions(r.state);
  return (
    <div class="actions-panel">
      <div class="actions" role="group" aria-label="Rollout actions">
        {(['resume', 'cancel', 'rollback'] as const).map((a) => {
          const q = QUESTIONS[a];
          return (
            <ActionButton
              key={a}
              label={q.label}
              enabled={allowed[a]}
              why={`only when ${allowedIn(a).join(' or ')}`}
              confirm={{ title: q.title, body: q.body, label: q.label }}
              run={() => api(`/v1/sentinel-rollouts/current/${q.path}`, { method: 'POST' })}
              onDone={() => (setError(null), setMessage(q.done), onChanged())}
              onError={(e) => (setMessage(null), setError(e))}
            />
          );
        })}
      </div>
      <Outcome error={error} message={message} />
    </div>
  );
}

function StartForm({ onStarted }: { onStarted(): void }) {
  const { api } = useSession();
  const [error, setError] = useState<ApiError | null>(null);
  const submit = (e: Event) => {
    e.preventDefault();
    const f = (e.currentTarget as HTMLFormElement).elements;
    const image = (f.namedItem('image') as HTMLInputElement).value.trim();
    const waves = parseWaves((f.namedItem('waves') as HTMLInputElement).value);
    api('/v1/sentinel-rollouts', { body: { image, ...(waves ? { wavePercentages: waves } : {}) } }).then(
      () => (setError(null), onStarted()),
      (err: ApiError) => setError(err),
    );
  };
  return (
    <form class="start-rollout" onSubmit={submit}>
      <h2>Start a rollout</h2>
      <label>
        Sentinel image <input name="image" required size={40} placeholder="ghcr.io/unkeyed/sentinel:v2" />
      </label>
      <label>
        Waves (cumulative %) <input name="waves" size={18} placeholder="1, 5, 25, 50, 100" />
      </label>
      <button type="submit" class="primary">
        Start rollout
      </button>
      <ErrorBox error={error} title="Refused" />
    </form>
  );
}

export function RolloutDetails({ r }: { r: Rollout }) {
  return (
    <>
      <dl class="facts">
        <dt>State</dt>
        <dd data-testid="rollout-state">
          <Badge status={r.state} />
        </dd>
        {r.image && (
          <>
            <dt>Image</dt>
            <dd class="mono">{r.image}</dd>
          </>
        )}
        {r.startedAt && (
          <>
            <dt>Started</dt>
            <dd>{timestamp(r.startedAt)}</dd>
          </>
        )}
        {r.slackWebhookUrl && (
          <>
            <dt>Slack</dt>
            <dd class="mono">{r.slackWebhookUrl}</dd>
          </>
        )}
      </dl>
      <Waves waves={waveProgress(r)} />
      <IdList title="Succeeded" testid="succeeded" items={(r.succeededIds ?? []).map((id) => ({ id }))} total={r.succeeded ?? 0} />
      <IdList title="Failed" testid="failed" items={failedOf(r)} total={r.failed ?? 0} />
      <IdList title="Skipped" testid="skipped" items={skippedOf(r)} total={r.skippedOffline ?? 0} />
    </>
  );
}

export function RolloutView() {
  // The first 100 of each list: a page stays light whatever the fleet (the API pages the rest).
  const res = useResource((api) => api<Rollout>('/v1/sentinel-rollouts/current?limit=100'), []);
  const reload = useDebounced(res.reload, 150);
  useEvents((e) => (e.type === 'rollout.wave' || e.type === 'sentinel.status') && reload());
  const r = res.data;
  return (
    <section aria-labelledby="view-title">
      <h1 id="view-title" tabIndex={-1}>
        Sentinels and rollout
      </h1>
      <ErrorBox error={res.error} title="Could not read the rollout" />
      {!r ? (
        !res.error && <Loading what="the rollout" />
      ) : (
        <>
          {r.state === 'idle' ? <p class="muted">No rollout has run yet.</p> : <RolloutDetails r={r} />}
          {r.state !== 'idle' && <Actions r={r} onChanged={reload} />}
          {rolloutActions(r.state).start && <StartForm onStarted={reload} />}
        </>
      )}
      <SentinelsPanel />
    </section>
  );
}

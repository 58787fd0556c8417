/** @jsxRuntime automatic */
/** @jsxImportSource preact */
// Audit: who did what, to what, with which outcome, newest first (GET /v1/audit; a key sees its
// scope's rows). A filter by actor, target or action prefix; "Older" walks the keyset pages.
import { useState } from 'preact/hooks';
import { ago, timestamp } from '../format';
import { useNow, useResource } from '../hooks';
import { Badge, ErrorBox, Loading } from './common';

interface AuditEntry {
  id: string;
  at: string;
  actor: { type: string; id: string | null };
  action: string;
  target: string | null;
  outcome: string;
  requestId: string | null;
  sourceIp: string | null;
}

/** Rows per page: a screenful. */
const PAGE = 50;

export function AuditView() {
  const now = useNow();
  const [filter, setFilter] = useState({ field: 'action', value: '' });
  const [cursor, setCursor] = useState<string | null>(null);
  const q = new URLSearchParams({ limit: String(PAGE) });
  if (filter.value) q.set(filter.field, filter.value);
  if (cursor) q.set('cursor', cursor);
  const res = useResource((api) => api<{ entries: AuditEntry[]; next: string | null }>(`/v1/audit?${q}`), [q.toString()]);
  const submit = (e: Event) => {
    e.preventDefault();
    const f = e.currentTarget as HTMLFormElement;
    setCursor(null);
    setFilter({ field: (f.elements.namedItem('field') as HTMLSelectElement).value, value: (f.elements.namedItem('value') as HTMLInputElement).value.trim() });
  };
  return (
    <section aria-labelledby="view-title">
      <h1 id="view-title" tabIndex={-1}>
        Audit
      </h1>
      <form class="filters" onSubmit={submit}>
        <label for="audit-field">Filter</label>
        <select id="audit-field" name="field" value={filter.field}>
          <option value="action">action starts with</option>
          <option value="actor">actor id</option>
          <option value="target">target id</option>
        </select>
        <input name="value" aria-label="Filter value" value={filter.value} spellcheck={false} />
        <button type="submit">Apply</button>
      </form>
      <ErrorBox error={res.error} title="Audit unavailable" />
      {!res.data ? (
        <Loading what="audit entries" />
      ) : res.data.entries.length === 0 ? (
        <p class="muted">No entries.</p>
      ) : (
        <table class="cards" data-testid="audit">
          <thead>
            <tr>
              <th scope="col">When</th>
              <th scope="col">Actor</th>
              <th scope="col">Action</th>
              <th scope="col">Target</th>
              <th scope="col">Outcome</th>
              <th scope="col">Source</th>
            </tr>
          </thead>
          <tbody>
            {res.data.entries.map((e) => (
              <AuditRow key={e.id} e={e} now={now} />
            ))}
          </tbody>
        </table>
      )}
      <p>
        {cursor && (
          <button type="button" onClick={() => setCursor(null)}>
            Newest
          </button>
        )}{' '}
        {res.data?.next && (
          <button type="button" onClick={() => setCursor(res.data!.next)}>
            Older
          </button>
        )}
      </p>
    </section>
  );
}

function AuditRow({ e, now }: { e: AuditEntry; now: number }) {
  return (
    <tr data-outcome={e.outcome}>
      <td data-label="When" title={timestamp(e.at)}>
        {ago(e.at, now)}
      </td>
      <td data-label="Actor">{`${e.actor.type}${e.actor.id ? `:${e.actor.id}` : ''}`}</td>
      <th scope="row" data-label="Action">
        {e.action}
      </th>
      <td data-label="Target">{e.target ?? '-'}</td>
      <td data-label="Outcome">
        <Badge status={e.outcome === 'ok' ? 'ready' : 'failed'} label={e.outcome} />
      </td>
      <td data-label="Source">{e.sourceIp ?? '-'}</td>
    </tr>
  );
}

/** @jsxRuntime automatic */
/** @jsxImportSource preact */
// The deployments of one environment: status, source, per-region ready/wanted, age, error,
// filtered by environment and status, kept current by live events without reloading.
import { useEffect, useRef } from 'preact/hooks';
import type { Api } from '../api';
import { age } from '../format';
import { useDebounced, useEvents, useNow, useResource, useSession, type LiveEventAny } from '../hooks';
import { applyRegion, applyStatus, countsOf, filterRows, source, STATUSES, type RegionCount, type Row } from '../models/deployments';
import { href } from '../router';
import type { DeploymentDetail, DeploymentSummary } from '../../../cli/api.gen';
import type { LiveEvent } from '../../../live-events';
import { Badge, ErrorBox, Loading } from './common';

/** How many deployments the list shows (the API's page; older ones are reached by id). */
const LIST_LIMIT = 100;
/** Progress reads in flight at once when the list does not carry per-region counts. */
const DETAIL_CONCURRENCY = 4;

async function loadList(api: Api, env: string): Promise<Row[]> {
  const r = await api<{ deployments: DeploymentSummary[] }>(`/v1/deployments?environmentId=${encodeURIComponent(env)}&limit=${LIST_LIMIT}`);
  // The list carries no per-region progress: each row's is read from its detail.
  return r.deployments.map((d) => ({ d }));
}

async function mapLimited<T>(items: T[], limit: number, fn: (item: T) => Promise<void>): Promise<void> {
  const queue = [...items];
  await Promise.all(Array.from({ length: Math.min(limit, queue.length) }, async () => {
    for (let item = queue.shift(); item !== undefined; item = queue.shift()) await fn(item).catch(() => {});
  }));
}

function Regions({ regions }: { regions: RegionCount[] | undefined }) {
  if (!regions) return <span class="muted">…</span>;
  return (
    <ul class="regions">
      {regions.map((r) => (
        <li key={r.region} class={r.failed ? 'bad' : r.ready >= r.wanted ? 'good' : ''} title={r.reason ?? undefined}>
          <span class="region-name">{r.region}</span> <span class="count">{r.ready}/{r.wanted}</span>
          {r.failed > 0 && <span class="failed"> · {r.failed} failed</span>}
        </li>
      ))}
    </ul>
  );
}

function Filters({ env, status }: { env: string; status: string }) {
  const go = (e: string, s: string) => (location.hash = href({ view: 'deployments', env: e.trim() || 'default', status: s }));
  return (
    <form class="filters" onSubmit={(e) => e.preventDefault()}>
      <label>
        Environment{' '}
        <input name="environment" value={env} size={16} onChange={(e) => go(e.currentTarget.value, status)} />
      </label>
      <label>
        Status{' '}
        <select name="status" value={status} onChange={(e) => go(env, e.currentTarget.value)}>
          <option value="">any</option>
          {STATUSES.map((s) => (
            <option key={s} value={s}>
              {s.replace(/_/g, ' ')}
            </option>
          ))}
        </select>
      </label>
    </form>
  );
}

export function DeploymentsTable({ rows, env, now }: { rows: Row[]; env: string; now: number }) {
  return (
    <table class="cards" data-testid="deployments">
      <caption class="sr-only">Deployments of environment {env}, newest first</caption>
      <thead>
        <tr>
          <th scope="col">Deployment</th>
          <th scope="col">Status</th>
          <th scope="col">Source</th>
          <th scope="col">Regions (ready/wanted)</th>
          <th scope="col">Age</th>
          <th scope="col">Error</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.d.id} data-id={r.d.id} data-status={r.d.status}>
            <th scope="row" data-label="Deployment">
              <a href={href({ view: 'deployment', id: r.d.id })}>{r.d.id}</a>
              {r.d.version && <small class="muted"> {r.d.version}</small>}
            </th>
            <td data-label="Status">
              <Badge status={r.d.status} />
              {r.d.desiredState === 'stopped' && r.d.status !== 'stopped' && <small class="muted"> (stopping)</small>}
            </td>
            <td data-label="Source" class="mono">
              {source(r.d)}
            </td>
            <td data-label="Regions">
              <Regions regions={r.regions} />
            </td>
            <td data-label="Age">
              <time dateTime={r.d.createdAt}>{age(r.d.createdAt, now)}</time>
            </td>
            <td data-label="Error" class="error-cell">
              {r.d.error ?? ''}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function DeploymentsView({ env, status }: { env: string; status: string }) {
  const { api } = useSession();
  const now = useNow();
  const list = useResource((a) => loadList(a, env), [env]);
  // Deployments whose per-region counts are still to be read (new ones, changed ones).
  const stale = useRef(new Set<string>());
  const tried = useRef(new Set<string>());

  const readCounts = useDebounced(() => {
    const ids = [...stale.current];
    stale.current.clear();
    void mapLimited(ids, DETAIL_CONCURRENCY, async (id) => {
      const d = await api<DeploymentDetail>(`/v1/deployments/${encodeURIComponent(id)}`);
      list.update((rows) => rows.map((r) => (r.d.id === id ? { ...r, regions: countsOf(d.topology) } : r)));
    });
  }, 150);
  const reloadList = useDebounced(list.reload, 150);

  useEffect(() => {
    for (const r of list.data ?? []) {
      if (r.regions || tried.current.has(r.d.id)) continue;
      tried.current.add(r.d.id);
      stale.current.add(r.d.id);
    }
    if (stale.current.size) readCounts();
  }, [list.data]);

  useEvents((raw: LiveEventAny) => {
    const e = raw as unknown as LiveEvent;
    if (e.type === 'deployment.status') {
      if (e.environmentId !== env) return;
      // A deployment the list does not hold yet was just created: read the list again.
      if (!list.data?.some((r) => r.d.id === e.deploymentId)) return reloadList();
      list.update((rows) => applyStatus(rows, e).rows);
      stale.current.add(e.deploymentId);
      readCounts();
    } else if (e.type === 'deployment.region') {
      list.update((rows) => applyRegion(rows, e));
    }
  });

  const rows = filterRows(list.data ?? [], status);
  return (
    <section aria-labelledby="view-title">
      <h1 id="view-title" tabIndex={-1}>
        Deployments
      </h1>
      <Filters env={env} status={status} />
      <ErrorBox error={list.error} title="Could not list deployments" />
      {!list.data ? (
        !list.error && <Loading what="deployments" />
      ) : rows.length === 0 ? (
        <p class="muted">No deployments{status ? ` with status ${status.replace(/_/g, ' ')}` : ''} in environment {env}.</p>
      ) : (
        <DeploymentsTable rows={rows} env={env} now={now} />
      )}
    </section>
  );
}

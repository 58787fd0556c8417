/** @jsxRuntime automatic */
/** @jsxImportSource preact */
// Regions: online/offline, last seen, lag, leader, object counts, drift krane healed and the
// desired states the cluster refused (with their reasons). Offline and never-seen regions
// come first and are flagged in words. Refreshed on `region.status` events and on a timer (a
// region going quiet sends no event until ctrl notices).
import { useDebounced, useEvents, useInterval, useNow, useResource } from '../hooks';
import { regionRows, type RegionRow } from '../models/regions';
import type { RegionView } from '../../../cli/api.gen';
import { Badge, ErrorBox, isUnavailable, Loading, Unavailable } from './common';

/** Backstop refresh: "last seen" and offline detection move without events. */
const REGIONS_REFRESH_MS = 10_000;

export function RegionsTable({ rows }: { rows: RegionRow[] }) {
  return (
    <table class="cards" data-testid="regions">
      <thead>
        <tr>
          <th scope="col">Region</th>
          <th scope="col">Status</th>
          <th scope="col">Last seen</th>
          <th scope="col">Lag</th>
          <th scope="col">Agent</th>
          <th scope="col">Last full sync</th>
          <th scope="col">Objects</th>
          <th scope="col">Drift repaired</th>
          <th scope="col">Refused</th>
        </tr>
      </thead>
      <tbody>
        {rows.map((r) => (
          <tr key={r.name} data-region={r.name} data-status={r.status} class={r.flagged ? 'flagged' : undefined}>
            <th scope="row" data-label="Region">
              {r.name}
            </th>
            <td data-label="Status">
              <Badge status={r.status} label={r.flagged ? `⚠ ${r.statusLabel}` : r.statusLabel} />
            </td>
            <td data-label="Last seen">{r.lastSeen}</td>
            <td data-label="Lag">{r.lag}</td>
            <td data-label="Agent">{r.leader}</td>
            <td data-label="Last full sync">{r.lastFullSync}</td>
            <td data-label="Objects">{r.objects}</td>
            <td data-label="Drift repaired">{r.drift}</td>
            <td data-label="Refused">
              {r.failures.length ? (
                <ul class="plain">
                  {r.failures.map((f) => (
                    <li key={f}>{f}</li>
                  ))}
                </ul>
              ) : (
                'none'
              )}
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function RegionsView() {
  const now = useNow();
  const res = useResource((api) => api<RegionView[]>('/v1/regions'), []);
  const reload = useDebounced(res.reload, 150);
  useEvents((e) => e.type.startsWith('region.') && reload());
  useInterval(() => !isUnavailable(res.error) && reload(), REGIONS_REFRESH_MS);
  const rows = res.data ? regionRows(res.data, now) : undefined;
  const down = rows?.filter((r) => r.flagged).length ?? 0;
  return (
    <section aria-labelledby="view-title">
      <h1 id="view-title" tabIndex={-1}>
        Regions
      </h1>
      {isUnavailable(res.error) ? (
        <Unavailable what="Regions" endpoint="GET /v1/regions" />
      ) : (
        <ErrorBox error={res.error} title="Could not read regions" />
      )}
      {rows && down > 0 && (
        <p class="warn-line" role="alert">
          {down} of {rows.length} regions not online.
        </p>
      )}
      {rows ? rows.length ? <RegionsTable rows={rows} /> : <p class="muted">No regions known yet.</p> : !res.error && <Loading what="regions" />}
    </section>
  );
}

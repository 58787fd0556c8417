/** @jsxRuntime automatic */
/** @jsxImportSource preact */
// The sentinel fleet: one row per sentinel with its region, desired and running image, replicas
// and health, so a rollout's effect is visible sentinel by sentinel. Re-read on `sentinel.status`
// and `rollout.wave` events (a rollout changes the desired image, which no event carries) and
// after every reconnect.
import { useDebounced, useEvents, useResource } from '../hooks';
import type { SentinelView } from '../../../cli/api.gen';
import { Badge, ErrorBox, Loading } from './common';

/** The API's page size; a bigger fleet is summarised by the rollout's waves above. */
const SENTINEL_LIMIT = 200;

export function SentinelsTable({ sentinels }: { sentinels: SentinelView[] }) {
  return (
    <table class="cards" data-testid="sentinels">
      <thead>
        <tr>
          <th scope="col">Sentinel</th>
          <th scope="col">Region</th>
          <th scope="col">Environment</th>
          <th scope="col">Image (running)</th>
          <th scope="col">Ready</th>
          <th scope="col">Health</th>
          <th scope="col">Deploy</th>
        </tr>
      </thead>
      <tbody>
        {sentinels.map((s) => (
          <tr key={s.id} data-id={s.id}>
            <th scope="row" data-label="Sentinel" class="mono">
              {s.id}
            </th>
            <td data-label="Region">{s.region}</td>
            <td data-label="Environment">{s.environmentId}</td>
            <td data-label="Image" class="mono">
              {s.image}
              {s.runningImage && s.runningImage !== s.image && <span class="muted"> (running {s.runningImage})</span>}
            </td>
            <td data-label="Ready">
              {s.readyReplicas}/{s.replicas}
            </td>
            <td data-label="Health">
              <Badge status={s.health} />
            </td>
            <td data-label="Deploy">
              <Badge status={s.deployStatus.toLowerCase()} label={s.deployStatus} />
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function SentinelsPanel() {
  const res = useResource((api) => api<{ sentinels: SentinelView[] }>(`/v1/sentinels?limit=${SENTINEL_LIMIT}`).then((r) => r.sentinels), []);
  const reload = useDebounced(res.reload, 250);
  useEvents((e) => (e.type === 'sentinel.status' || e.type === 'rollout.wave') && reload());
  return (
    <>
      <h2>Sentinels</h2>
      <ErrorBox error={res.error} title="Could not list sentinels" />
      {res.data ? res.data.length ? <SentinelsTable sentinels={res.data} /> : <p class="muted">No sentinels yet.</p> : !res.error && <Loading what="sentinels" />}
    </>
  );
}

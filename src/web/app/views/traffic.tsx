/** @jsxRuntime automatic */
/** @jsxImportSource preact */
// A deployment's strategy in one line, and its environment's traffic weights. The traffic
// endpoint arrives with progressive delivery; a ctrl without it answers 404 and the panel says
// so instead of failing the page.
import { useDebounced, useEvents, useResource } from '../hooks';
import { strategyText } from '../models/canary';
import type { Strategy, Traffic } from '../../../cli/api.gen';
import { ErrorBox, isUnavailable, Unavailable } from './common';

export function StrategyLine({ strategy }: { strategy: Strategy }) {
  return <span>{strategyText(strategy)}</span>;
}

export function trafficPath(environmentId: string): string {
  return `/v1/environments/${encodeURIComponent(environmentId)}/traffic`;
}

export function WeightsTable({ traffic, highlight }: { traffic: Traffic; highlight?: string }) {
  return (
    <table class="cards weights" data-testid="traffic">
      <caption>
        Traffic of <span class="mono">{traffic.hostname}</span>
      </caption>
      <thead>
        <tr>
          <th scope="col">Deployment</th>
          <th scope="col">Weight</th>
        </tr>
      </thead>
      <tbody>
        {traffic.backends.map((b) => (
          <tr key={b.deploymentId} class={b.deploymentId === highlight ? 'current' : undefined} data-deployment={b.deploymentId} data-weight={b.weight}>
            <th scope="row" data-label="Deployment" class="mono">
              {b.deploymentId}
            </th>
            <td data-label="Weight">
              <progress max={100} value={b.weight} aria-label={`weight of ${b.deploymentId}`} /> {b.weight}%
            </td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function TrafficPanel({ environmentId, deploymentId }: { environmentId: string; deploymentId: string }) {
  const res = useResource((api) => api<Traffic>(trafficPath(environmentId)), [environmentId]);
  const reload = useDebounced(res.reload, 150);
  useEvents((e) => e.type === 'deployment.traffic' && reload());
  if (isUnavailable(res.error)) return <Unavailable what="Traffic weights" endpoint={`GET ${trafficPath(environmentId)}`} />;
  if (res.error) return <ErrorBox error={res.error} title="Could not read traffic" />;
  if (!res.data) return null;
  return <WeightsTable traffic={res.data} highlight={deploymentId} />;
}

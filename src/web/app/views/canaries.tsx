/** @jsxRuntime automatic */
/** @jsxImportSource preact */
// Canaries and blue-green deployments of one environment: the current traffic weights, and for
// each deployment taking part, its weight over time and its analysis values as a small chart.
// History is what this page has seen (the traffic snapshot, then `deployment.traffic` and
// `deployment.analysis` events). A ctrl without progressive delivery answers 404 for the
// traffic endpoint and the view says so.
import { useEffect, useMemo, useState } from 'preact/hooks';
import { useEvents, useNow, useResource } from '../hooks';
import { addAnalysis, analysisFromEvent, applyTable, chartGeometry, tableTracker, type CanarySeries } from '../models/canary';
import { href } from '../router';
import type { Traffic } from '../../../cli/api.gen';
import { ErrorBox, isUnavailable, Loading, Unavailable } from './common';
import { trafficPath, WeightsTable } from './traffic';

type AllSeries = Record<string, CanarySeries>;
const EMPTY: CanarySeries = { weights: [], analysis: [] };

export function CanaryChart({ id, series, now }: { id: string; series: CanarySeries; now: number }) {
  const g = chartGeometry(series, now);
  const last = series.analysis[series.analysis.length - 1];
  return (
    <figure class="chart" data-testid="canary-chart" data-deployment={id}>
      <svg viewBox={`0 0 ${g.width} ${g.height}`} role="img" aria-label={`weight and analysis of ${id}`}>
        <line class="axis" x1={g.plot.left} y1={g.plot.bottom} x2={g.plot.right} y2={g.plot.bottom} />
        {g.yTicks.map((t) => (
          <text key={t.label} class="tick" x={g.plot.left - 4} y={t.y} text-anchor="end" dominant-baseline="middle">
            {t.label}
          </text>
        ))}
        {g.valueTicks.map((t) => (
          <text key={t.label} class="tick" x={g.plot.right + 4} y={t.y} dominant-baseline="middle">
            {t.label}
          </text>
        ))}
        {g.xTicks.map((t, i) => (
          <text key={i} class="tick" x={t.x} y={g.height - 6} text-anchor={i === 0 ? 'start' : 'end'}>
            {t.label}
          </text>
        ))}
        {g.bounds.map((b) => (
          <line key={b.label} class="bound" x1={g.plot.left} y1={b.y} x2={g.plot.right} y2={b.y}>
            <title>{b.label}</title>
          </line>
        ))}
        <path class="weight" d={g.weightPath} fill="none" />
        {g.dots.map((d, i) => (
          <circle key={i} class={`dot v-${d.verdict}`} cx={d.x} cy={d.y} r={3.5}>
            <title>
              {d.value} ({d.verdict})
            </title>
          </circle>
        ))}
      </svg>
      <figcaption>
        <a href={href({ view: 'deployment', id })} class="mono">
          {id}
        </a>
        : weight {series.weights[series.weights.length - 1]?.weight ?? '–'}% (line, left axis)
        {last && (
          <>
            ; last analysis {last.value ?? 'no value'} ({last.verdict}) (dots, right axis)
          </>
        )}
      </figcaption>
    </figure>
  );
}

/** Deployments worth a chart: those sharing traffic, and any with analysis seen. */
export function chartedIds(traffic: Traffic | undefined, series: AllSeries): string[] {
  const ids = new Set<string>();
  for (const b of traffic?.backends ?? []) if (b.weight > 0 && b.weight < 100) ids.add(b.deploymentId);
  for (const [id, s] of Object.entries(series)) if (s.analysis.length) ids.add(id);
  return [...ids].sort();
}

export function CanariesView({ env }: { env: string }) {
  const now = useNow(2000);
  const tables = useMemo(() => tableTracker(), [env]);
  const res = useResource((api) => tables.read(() => api<Traffic>(trafficPath(env))), [env]);
  const [series, setSeries] = useState<AllSeries>({});
  useEffect(() => setSeries({}), [env]);
  // The weight lines follow the table alone (reads and events both land in it), in order.
  useEffect(() => {
    const t = res.data;
    if (!t) return;
    setSeries((all) => applyTable(all, t.backends, Date.now()));
  }, [res.data]);
  useEvents((e) => {
    const id = typeof e.deploymentId === 'string' ? e.deploymentId : undefined;
    if (e.type === 'deployment.traffic') {
      if (e.environmentId !== undefined && e.environmentId !== env) return;
      if (!Array.isArray(e.backends)) return res.reload();
      const backends = e.backends as Traffic['backends'];
      tables.event(backends);
      res.update((t) => ({ ...t, backends }));
    } else if (e.type === 'deployment.analysis' && id) {
      const p = analysisFromEvent(e, Date.now());
      if (p) setSeries((all) => ({ ...all, [id]: addAnalysis(all[id] ?? EMPTY, p) }));
    }
  });
  const ids = chartedIds(res.data, series);
  return (
    <section aria-labelledby="view-title">
      <h1 id="view-title" tabIndex={-1}>
        Canaries and blue-green <small class="muted">environment {env}</small>
      </h1>
      {isUnavailable(res.error) ? (
        <Unavailable what="Progressive delivery (canary and blue-green)" endpoint={`GET ${trafficPath(env)}`} />
      ) : (
        <ErrorBox error={res.error} title="Could not read traffic" />
      )}
      {res.data && <WeightsTable traffic={res.data} />}
      {res.data && ids.length === 0 && <p class="muted">No canary or blue-green deployment is shifting traffic now.</p>}
      {ids.map((id) => (
        <CanaryChart key={id} id={id} series={series[id] ?? EMPTY} now={now} />
      ))}
      {!res.data && !res.error && <Loading what="traffic" />}
    </section>
  );
}

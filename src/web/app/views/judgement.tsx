/** @jsxRuntime automatic */
/** @jsxImportSource preact */
// The compare judge's verdict per region on the deployment page (issue 27): both series as the
// last check read them (the stable's and the canary's over the same window), the verdict and
// its reason in words. Nothing for deployments without compare checks.
import { latestJudgements, seriesGeometry, type JudgeCheck } from '../models/judge';
import { ShiftChart } from './shift-chart';

function Plot({ c }: { c: JudgeCheck }) {
  if (!c.series) return null;
  const g = seriesGeometry(c.series);
  return (
    <svg viewBox={`0 0 ${g.width} ${g.height}`} role="img" aria-label={`stable and canary series in ${c.region}`}>
      <line class="axis" x1={g.plot.left} y1={g.plot.bottom} x2={g.plot.right} y2={g.plot.bottom} />
      {g.yTicks.map((t) => (
        <text key={t.label} class="tick" x={g.plot.left - 4} y={t.y} text-anchor="end" dominant-baseline="middle">
          {t.label}
        </text>
      ))}
      <path class="series-stable" d={g.baselinePath} fill="none" data-testid="series-stable" />
      <path class="series-canary" d={g.canaryPath} fill="none" data-testid="series-canary" />
    </svg>
  );
}

export function Judgements({ checks }: { checks: unknown }) {
  const list = latestJudgements(checks);
  if (!list.length) return null;
  return (
    <>
      <h2>Canary judgement</h2>
      {list.map((c) => (
        <figure key={c.region} class="chart" data-testid="judgement" data-region={c.region} data-verdict={c.verdict}>
          <Plot c={c} />
          <ShiftChart checks={checks} region={c.region} />
          <figcaption>
            <strong>{c.region}</strong>: <span class={`verdict v-${c.verdict}`}>{c.verdict}</span> — {c.reason}
            <br />
            <small class="muted">
              <span class="legend-stable">stable</span>
              {c.stableId ? <span class="mono"> {c.stableId}</span> : null} against <span class="legend-canary">canary</span>
              {c.method && c.method !== 'none' ? `, ${c.method}` : ''}
            </small>
          </figcaption>
        </figure>
      ))}
    </>
  );
}

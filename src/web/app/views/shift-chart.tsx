/** @jsxRuntime automatic */
/** @jsxImportSource preact */
// The evidence a person needs to trust a compare verdict (issue 37), for one region: at each
// check, how much worse the canary is estimated to be (dot, colored by the check's verdict), its
// fixed-sample interval (thin bar; dashed when the samples are too few for its level) and its
// anytime interval (wide pale bar: the one the decision uses, valid at every check at once),
// against equality and the tolerance (dashed). The canary fails when the anytime interval has
// left equality behind and the estimate is past the tolerance. Nothing without compare checks.
import { shiftGeometry, shiftTrail } from '../models/shift';

/** Colors by the page's own variables, inline: this chart brings no stylesheet of its own. */
const PALE = { stroke: 'var(--accent)', strokeOpacity: 0.25, strokeWidth: 7, strokeLinecap: 'round' } as const;
const THIN = { stroke: 'var(--fg)', strokeWidth: 1.5 } as const;

export function ShiftChart({ checks, region }: { checks: unknown; region: string }) {
  const points = shiftTrail(checks, region);
  if (!points.length) return null;
  const g = shiftGeometry(points);
  return (
    <>
      <svg viewBox={`0 0 ${g.width} ${g.height}`} role="img" aria-label={`estimate and intervals per check in ${region}, against the tolerance`} data-testid="shift-chart" data-units={g.units} data-points={g.marks.length}>
        <line class="axis" x1={g.plot.left} y1={g.plot.bottom} x2={g.plot.right} y2={g.plot.bottom} />
        {g.yTicks.map((t) => (
          <text key={t.label} class="tick" x={g.plot.left - 4} y={t.y} text-anchor="end" dominant-baseline="middle">
            {t.label}
          </text>
        ))}
        <line class="axis" x1={g.plot.left} y1={g.equalY} x2={g.plot.right} y2={g.equalY} data-testid="shift-equal">
          <title>as good as the stable</title>
        </line>
        <path class="bound" d={g.tolerancePath} fill="none" data-testid="shift-tolerance">
          <title>{g.toleranceLabel}</title>
        </path>
        {g.marks.map((m, i) => (
          <g key={i} data-testid="shift-check" data-verdict={m.verdict}>
            <title>{m.title}</title>
            <line x1={m.x} x2={m.x} y1={m.anyLow} y2={m.anyHigh} style={PALE} data-open={`${m.openLow ? 'low' : ''}${m.openHigh ? 'high' : ''}`} />
            <line x1={m.x} x2={m.x} y1={m.low} y2={m.high} style={{ ...THIN, ...(m.reachable ? {} : { strokeDasharray: '2 2' }) }} />
            <circle class={`dot v-${m.verdict}`} cx={m.x} cy={m.y} r={3.5} />
          </g>
        ))}
        <text class="tick" x={g.plot.right} y={g.toleranceLabelY} text-anchor="end">
          {g.toleranceLabel}
        </text>
      </svg>
      <small class="muted" data-testid="shift-legend">
        per check: the estimate (dot), its interval (bar), the anytime interval (pale bar), against {g.units === 'ratio' ? '1× (as good as the stable)' : '0 (as good as the stable)'} and the {g.toleranceLabel} (dashed)
      </small>
    </>
  );
}

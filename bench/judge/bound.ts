// Why the judge's null is "no worse than the stable", not "no worse than the tolerance" (issue
// 37): what any test of the tolerance's boundary could reach on the issue's two latency targets,
// in the normal approximation of the rank statistic (Z_k ~ N(θ·√I_k, 1), I_k = 5k at check k,
// ten samples a side a check, verdicts from check 2). θ is the effect in rank units,
// (AUC − ½)·√12, of the canary less the tolerance against the stable.
//
// - the one-look ceiling: the most powerful level-α test on all data at the deadline (Neyman-
//   Pearson, z on the logs); no sequential test can beat it by that check;
// - the best constant boundary (Pocock) holding the level at every look up to 40;
// - the issue 27 mixture (0.9 at θ 0.7, 0.1 on a one-sided N(0, 1) mixture), anytime-valid.
import { msprtOneSidedLogLR } from '../../src/workflow/progressive/judge';
import { normalCdf, normalQuantile } from '../../src/workflow/progressive/judge/special';
import { rng } from './scenarios';

const LOOKS = 40;

/** θ of a log-normal canary `ratio` × its stable less the tolerance, at noise σ. */
const thetaOf = (ratio: number, tolerance: number, sigma: number) => (normalCdf(Math.log(ratio / (1 + tolerance)) / (sigma * Math.SQRT2)) - 0.5) * Math.sqrt(12);

/** Each run's z at every check, for effect θ. */
function walks(theta: number, runs: number, seed: number): Float64Array[] {
  const r = rng(seed);
  return Array.from({ length: runs }, () => {
    const z = new Float64Array(LOOKS);
    let s = 0;
    for (let k = 1; k <= LOOKS; k++) {
      s += theta * 5 + Math.sqrt(5) * r.normal();
      z[k - 1] = s / Math.sqrt(5 * k);
    }
    return z;
  });
}

const crossed = (ws: Float64Array[], looks: number, rejects: (z: number, k: number) => boolean) =>
  ws.filter((z) => {
    for (let k = 2; k <= looks; k++) if (rejects(z[k - 1]!, k)) return true;
    return false;
  }).length / ws.length;

export function boundaryNullCeiling(runs = 20_000, alpha = 0.05, tolerance = 0.1) {
  const nullWalks = walks(0, runs, 1);
  // The Pocock bar: the constant c with P₀(some look 2…40 ≥ c) = α, by bisection on these draws.
  let lo = 1.5;
  let hi = 4;
  for (let i = 0; i < 40; i++) {
    const c = (lo + hi) / 2;
    if (crossed(nullWalks, LOOKS, (z) => z >= c) > alpha) lo = c;
    else hi = c;
  }
  const bar = hi;
  const old = (z: number, k: number) => {
    const info = 5 * k;
    const point = Math.log(0.9) + 0.7 * z * Math.sqrt(info) - (0.49 * info) / 2;
    const wide = Math.log(0.1) + msprtOneSidedLogLR(z, info);
    return Math.max(point, wide) + Math.log1p(Math.exp(-Math.abs(point - wide))) >= Math.log(1 / alpha);
  };
  const target = (name: string, ratio: number, sigma: number, looks: number) => {
    const theta = thetaOf(ratio, tolerance, sigma);
    const ws = walks(theta, runs, 2);
    // z on the logs at the deadline: δ / (σ·√(2/n)), n = 10·looks a side.
    const np = normalCdf(Math.log(ratio / (1 + tolerance)) / (sigma * Math.sqrt(2 / (10 * looks))) - normalQuantile(1 - alpha));
    const round = (x: number) => Math.round(x * 1000) / 1000;
    return { target: name, theta: round(theta), oneLookCeiling: round(np), pocock: round(crossed(ws, looks, (z) => z >= bar)), issue27Mixture: round(crossed(ws, looks, old)) };
  };
  return {
    runs,
    pocockBar: Math.round(bar * 1000) / 1000,
    targets: [target('1.5× at σ 0.5 within 5 checks (≥ 0.9 asked)', 1.5, 0.5, 5), target('1.2× at σ 0.3 within 10 checks (≥ 0.5 asked)', 1.2, 0.3, 10)],
  };
}

// The simulated canaries of bench:judge (issue 37): each scenario draws one run's series, both
// sides, for every look at once (LOOKS checks of SAMPLES_PER_CHECK samples a side, a 1 s range
// step at a 10 s interval), from a seeded generator, so every setting judges the same draws.
//
// Latencies: log-normal samples around a level, independent, AR(1) in the log (ρ 0.8, as
// overlapping windows make them) or a 30-second mean sampled every second (what
// `rate(sum[30s]) / rate(count[30s])` reads). Counts: errors and requests per sample, the canary
// at 10% of the traffic, Poisson errors; autocorrelated through a load and an error rate both
// sides share (AR(1)), or smoothed as `rate(x[30s])` sampled every second (real-valued, each
// event spread over 30 samples). Pure apart from the generator's state.

export const SAMPLES_PER_CHECK = 10;
/** The window of a smoothed series (samples): a 30 s rate at a 1 s step. */
const SMOOTH = 30;
/** The lag-1 autocorrelation of the AR(1) cases. */
const RHO = 0.8;

export function rng(seed: number) {
  let a = seed >>> 0;
  const uniform = () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return (((t ^ (t >>> 14)) >>> 0) + 0.5) / 4294967296;
  };
  const normal = () => Math.sqrt(-2 * Math.log(uniform())) * Math.cos(2 * Math.PI * uniform());
  /** Knuth's method for small means, a normal approximation (rounded, ≥ 0) past 50. */
  const poisson = (lambda: number) => {
    if (lambda > 50) return Math.max(0, Math.round(lambda + Math.sqrt(lambda) * normal()));
    const l = Math.exp(-lambda);
    let k = 0;
    for (let p = uniform(); p > l; p *= uniform()) k++;
    return k;
  };
  return { uniform, normal, poisson };
}
export type Rng = ReturnType<typeof rng>;

/** One run: both sides' values per sample; for counts also the request counts per sample. */
export interface Run {
  baseline: number[];
  canary: number[];
  totals?: { baseline: number[]; canary: number[] };
}

export type Noise = 'iid' | 'ar1' | 'smoothed';

export interface Scenario {
  name: string;
  kind: 'latency' | 'counts';
  /** aa: the canary is no worse (a failure is a false alarm); worse: beyond tolerance; inside: worse, within it. */
  truth: 'aa' | 'worse' | 'inside';
  make(r: Rng, samples: number): Run;
}

/** A standard normal series: independent, or AR(1) with unit variance. */
function gaussian(r: Rng, n: number, noise: 'iid' | 'ar1'): number[] {
  if (noise === 'iid') return Array.from({ length: n }, () => r.normal());
  let x = r.normal();
  return Array.from({ length: n }, () => (x = RHO * x + Math.sqrt(1 - RHO * RHO) * r.normal()));
}

/** Latency samples: `level`·exp(σ·z), or for `smoothed` the mean of the last 30 per-second values. */
function latencies(r: Rng, n: number, level: (i: number) => number, sigma: (i: number) => number, noise: Noise): number[] {
  if (noise !== 'smoothed') return gaussian(r, n, noise).map((z, i) => level(i) * Math.exp(sigma(i) * z));
  const perSecond = Array.from({ length: n + SMOOTH - 1 }, (_, j) => level(j - SMOOTH + 1) * Math.exp(sigma(j - SMOOTH + 1) * r.normal()));
  const out: number[] = [];
  let sum = perSecond.slice(0, SMOOTH).reduce((a, b) => a + b, 0);
  for (let i = 0; i < n; i++) {
    out.push(sum / SMOOTH);
    sum += (perSecond[i + SMOOTH] ?? 0) - perSecond[i]!;
  }
  return out;
}

export const latency = (name: string, truth: Scenario['truth'], ratio: number, sigma: number, noise: Noise = 'iid'): Scenario => ({
  name,
  kind: 'latency',
  truth,
  make: (r, n) => ({ baseline: latencies(r, n, () => 0.2, () => sigma, noise), canary: latencies(r, n, () => 0.2 * ratio, () => sigma, noise) }),
});

/** Both sides 4× slower and noisier from the 4th check on: an environment's bad minutes, not the canary's. */
export const environmentWide: Scenario = {
  name: 'latency, both 4× worse from check 4',
  kind: 'latency',
  truth: 'aa',
  make: (r, n) => {
    const from = 3 * SAMPLES_PER_CHECK;
    const level = (i: number) => (i >= from ? 0.8 : 0.2);
    const sigma = (i: number) => (i >= from ? 0.8 : 0.5);
    return { baseline: latencies(r, n, level, sigma, 'iid'), canary: latencies(r, n, level, sigma, 'iid') };
  },
};

export interface Traffic {
  /** Requests per second through both deployments. */
  perSecond: number;
  /** The canary's share of them, per sample (a walk's step may change it). */
  share: (i: number) => number;
  /** The stable's error rate, and the canary's as a multiple of it. */
  rate: number;
  ratio: number;
  noise: Noise;
  /** A factor on both sides' error rate per sample (an environment-wide burst). */
  burst?: (i: number) => number;
  /** Errors overdispersed independently per side (bursts of one deployment): σ of a log-normal factor. */
  overdispersion?: number;
}

/** Errors and requests per 1 s sample for both sides. */
function countSeries(r: Rng, n: number, t: Traffic): Run {
  const m = n + SMOOTH - 1;
  const load = t.noise === 'ar1' ? gaussian(r, m, 'ar1').map((z) => Math.exp(0.3 * z - 0.045)) : new Array<number>(m).fill(1);
  const env = t.noise === 'ar1' ? gaussian(r, m, 'ar1').map((z) => Math.exp(0.5 * z - 0.125)) : new Array<number>(m).fill(1);
  const side = (canary: boolean) => {
    const errors: number[] = [];
    const totals: number[] = [];
    for (let j = 0; j < m; j++) {
      const i = j - (m - n);
      const share = t.share(Math.max(0, i));
      const req = r.poisson(t.perSecond * load[j]! * (canary ? share : 1 - share));
      const od = t.overdispersion ? Math.exp(t.overdispersion * r.normal() - (t.overdispersion * t.overdispersion) / 2) : 1;
      const rate = Math.min(1, t.rate * (canary ? t.ratio : 1) * env[j]! * (t.burst?.(Math.max(0, i)) ?? 1) * od);
      errors.push(r.poisson(req * rate));
      totals.push(req);
    }
    return { errors: smooth(errors, n, t.noise), totals: smooth(totals, n, t.noise) };
  };
  const b = side(false);
  const c = side(true);
  return { baseline: b.errors, canary: c.errors, totals: { baseline: b.totals, canary: c.totals } };
}

/** The last n samples; `smoothed`: each a 30 s rate (per second), so their sum is still the count. */
function smooth(xs: number[], n: number, noise: Noise): number[] {
  if (noise !== 'smoothed') return xs.slice(xs.length - n);
  const out: number[] = [];
  for (let i = xs.length - n; i < xs.length; i++) {
    let s = 0;
    for (let j = i - SMOOTH + 1; j <= i; j++) s += xs[j]!;
    out.push(s / SMOOTH);
  }
  return out;
}

export const counts = (name: string, truth: Scenario['truth'], t: Traffic): Scenario => ({ name, kind: 'counts', truth, make: (r, n) => countSeries(r, n, t) });

const tenth = () => 0.1;

export function scenarios(): Scenario[] {
  return [
    latency('latency A/A, independent (σ 0.5)', 'aa', 1, 0.5),
    latency('latency A/A, AR(1) ρ 0.8', 'aa', 1, 0.5, 'ar1'),
    latency('latency A/A, 30 s mean each second', 'aa', 1, 0.5, 'smoothed'),
    environmentWide,
    latency('latency 1.05× (inside tolerance)', 'inside', 1.05, 0.5),
    latency('latency 1.1× (at tolerance)', 'inside', 1.1, 0.5),
    latency('latency 1.5× (σ 0.5)', 'worse', 1.5, 0.5),
    latency('latency 1.2× (σ 0.3)', 'worse', 1.2, 0.3),
    latency('latency 2× (σ 0.5)', 'worse', 2, 0.5),
    latency('latency 1.5×, AR(1) ρ 0.8', 'worse', 1.5, 0.5, 'ar1'),
    latency('latency 1.5×, 30 s mean each second', 'worse', 1.5, 0.5, 'smoothed'),
    counts('errors A/A 1%, independent', 'aa', { perSecond: 1000, share: tenth, rate: 0.01, ratio: 1, noise: 'iid' }),
    counts('errors A/A 1%, shared AR(1) load and rate', 'aa', { perSecond: 1000, share: tenth, rate: 0.01, ratio: 1, noise: 'ar1' }),
    counts('errors A/A 1%, 30 s rate each second', 'aa', { perSecond: 1000, share: tenth, rate: 0.01, ratio: 1, noise: 'smoothed' }),
    counts('errors A/A 0.1% (sparse)', 'aa', { perSecond: 1000, share: tenth, rate: 0.001, ratio: 1, noise: 'iid' }),
    // The step goes from 10% to 50% at check 10 and an incident multiplies both sides' errors by 5
    // over checks 15-20: more of the window's errors fall in the 50% part, through no fault of the canary.
    counts('errors A/A, step 10%→50% and a shared burst', 'aa', {
      perSecond: 1000,
      share: (i) => (i < 10 * SAMPLES_PER_CHECK ? 0.1 : 0.5),
      rate: 0.005,
      ratio: 1,
      noise: 'iid',
      burst: (i) => (i >= 14 * SAMPLES_PER_CHECK && i < 20 * SAMPLES_PER_CHECK ? 5 : 1),
    }),
    counts('errors A/A 1%, bursty per side (overdispersed)', 'aa', { perSecond: 1000, share: tenth, rate: 0.01, ratio: 1, noise: 'iid', overdispersion: 0.5 }),
    counts('errors 1% → 2%, 1000 req/s', 'worse', { perSecond: 1000, share: tenth, rate: 0.01, ratio: 2, noise: 'iid' }),
    counts('errors 1% → 2%, 100 req/s', 'worse', { perSecond: 100, share: tenth, rate: 0.01, ratio: 2, noise: 'iid' }),
    counts('errors 1% → 1.2%, 1000 req/s', 'worse', { perSecond: 1000, share: tenth, rate: 0.01, ratio: 1.2, noise: 'iid' }),
    counts('errors 0.1% → 0.3% (sparse)', 'worse', { perSecond: 1000, share: tenth, rate: 0.001, ratio: 3, noise: 'iid' }),
  ];
}

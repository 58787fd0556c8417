// The canary judge (issues 27, 37): pure statistics that decide whether a canary is worse than the
// stable deployment it would replace, from the two series over the same window. No I/O: the
// workflow (src/workflow/progressive/judgement.ts) reads the series from Prometheus and calls
// compareSeries once per region per check; the benchmark (bench/judge.ts) drives it directly.
//
// - special.ts: normal distribution, log-gamma, the incomplete beta function and the binomial
//   tails through it (defined for real counts).
// - exact.ts: the exact null distribution of U (the recursion in probabilities), within a budget.
// - mann-whitney.ts: the U test with midranks, tie and continuity correction, exact where scipy's
//   `auto` is (either sample ≤ 8 values, no ties); its evidence as a normal score either way.
// - hodges-lehmann.ts: the shift estimate (median of pairwise differences), the Moses interval
//   with an exact rank where affordable, its true coverage when the level is out of reach, and
//   order statistics of the differences by bisection (no n1·n2 sort).
// - sequential.ts: the anytime-valid tests of the rank statistic (a prior tuned for the effects
//   that count and the tolerance boundary; a normal mixture for "better"), their score bars
//   (hence the anytime interval) and the correction for autocorrelated samples.
// - counts.ts: the count rule: errors given requests, window by window (time-inhomogeneous
//   Poisson), its anytime mixture and confidence sequence, the fewest-errors part, and the
//   fixed-sample Clopper-Pearson interval.
// - compare.ts: the verdict (fail: shown worse than the stable and estimated over tolerance;
//   pass; inconclusive; early pass for promoteEarly) with its evidence; words.ts: the reason.
//
// Why these: a rank test does not assume a distribution (latencies and error ratios are skewed),
// the tolerance makes a shown but negligible difference pass, and comparing with the stable over
// the same window means an environment-wide bad minute moves both series, not the verdict.
export { compareSeries, formatP, type Comparison, type CompareInput, type CompareOptions, type Direction, type Method, type ShiftEvidence, type Verdict } from './compare';
export { mannWhitney, midranks, type MannWhitney } from './mann-whitney';
export { hodgesLehmann, median, type Shift } from './hodges-lehmann';
export { conditionalBinomialP, clopperPearson, rateRatio, countLogLR, ratioEstimate, type Counts, type Window } from './counts';
export { msprtLogLR, msprtOneSidedLogLR, priorLogLR, scoreBar, rankAutocorrelation, alwaysValidP, rankInformation, WORSE_PRIOR } from './sequential';
export { normalCdf, normalSf, normalQuantile, binomSf, binomCdf, incompleteBeta } from './special';
export type { Dropped } from './words';

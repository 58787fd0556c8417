// The canary judge (issue 27): pure statistics that decide whether a canary is worse than the
// stable deployment it would replace, from the two series over the same window. No I/O: the
// workflow (src/workflow/progressive/judgement.ts) reads the series from Prometheus and calls compareSeries
// once per region per check; the benchmark (bench/judge.ts) drives it directly.
//
// - special.ts: normal distribution, log-gamma, binomial tails.
// - mann-whitney.ts: the U test with midranks, tie correction and continuity correction, exact
//   for small untied samples (as scipy's `mannwhitneyu`).
// - hodges-lehmann.ts: the shift estimate (median of pairwise differences) and its Moses
//   interval from order statistics of those differences.
// - counts.ts: the rule for sparse error series: errors given requests, a conditional binomial
//   test, with the rate ratio's interval and its always-valid (beta-binomial mixture) form.
// - sequential.ts: always-valid decisions across repeated checks (a mixture SPRT on the rank
//   statistic), so checking every interval does not inflate false failures.
// - compare.ts: the verdict (pass, fail, inconclusive; early pass for promoteEarly) with its
//   evidence and the reason in words.
//
// Why these: a rank test does not assume a distribution (latencies and error ratios are skewed),
// the tolerance makes a significant but negligible difference pass, and comparing with the stable
// over the same window means an environment-wide bad minute moves both series, not the verdict.
export { compareSeries, formatP, type Comparison, type CompareInput, type CompareOptions, type Direction, type Method, type Verdict } from './compare';
export { mannWhitney, midranks, type MannWhitney } from './mann-whitney';
export { hodgesLehmann, median, type Shift } from './hodges-lehmann';
export { conditionalBinomialP, clopperPearson, rateRatio, betaBinomialLogLR, type Counts } from './counts';
export { msprtLogLR, msprtOneSidedLogLR, msprtFocusedLogLR, rankAutocorrelation, alwaysValidP, rankInformation } from './sequential';
export { normalCdf, normalSf, normalQuantile, binomSf } from './special';

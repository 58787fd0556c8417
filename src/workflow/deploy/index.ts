// A deployment's life, from the API call to ready (or failed) and every later stop and start.
//
// - deploy.ts: DeployService, object keyed by deployment id: load and validate, build, write
//   topologies and outbox rows, ensure sentinels, wait for krane's reports, assign domains,
//   ready; with a canary or blue-green strategy it hands the walk to ../progressive in the same
//   invocation (promote/abort reach it as a stored command plus a wake-up of its shared
//   notifyInstances).
// - steps.ts: the deploy's database steps (topologies, sentinels, domains when ready, cleanup).
// - desired-state.ts: DesiredStateService, object keyed by deployment id: stop / start.
// - commands.ts: create / rollback / promote / start / stop as the API calls them, and the
//   recovery sweep for deployments whose workflow never started. Each takes an `alongside`
//   callback its caller's audit row rides on, in the transaction that makes the change.
// - admission.ts: what a deploy may ask for (regions, features, versions); features.ts: the
//   workspace feature flags, read once and journaled.
// - spec.ts: the deployment spec (API body, createDeployment input, rollback copy) in one schema.
// - build.ts: the pluggable image builder (stopped by an abort signal); build-step.ts: the
//   deploy's build step, which stops the build when the operator aborts the canary being built;
//   progress.ts: the pure readiness rule.
// - hostnames.ts: hostname ownership (issue 32): the names an environment and a deployment are
//   reached on, the ones a caller may not give, and their claims (one owner per name).
// - wait.ts: waiting on krane's reports: awakeable + periodic re-check + deadline, and an
//   optional offline check that ends the wait when a region stays offline past the grace.
//
// Keying: one deployment's handlers run on its key in arrival order.
export * from './build';
export * from './commands';
export * from './deploy';
export * from './desired-state';
export * from './progress';
export * from './hostnames';

// Status: what the cluster actually runs, turned into the reports ctrl stores.
//
// - pod.ts / sentinel.ts: pure derivations (pod → pending/running/failed + reason + stable DNS
//   address; sentinel Deployment → replicas, observed generation, running image, health).
// - instances.ts / sentinels.ts: watchers built on the Reflector (src/kube/reflector.ts), scoped
//   by the managed-by label; they emit on change and re-emit everything after each full relist.
// - autoscalers.ts: the HorizontalPodAutoscalers of autoscaled deployments (bounds, current and
//   desired replicas, CPU), reported beside the deployment's instances.
// - They write to a StatusSink (src/sync/wire: the interface; the reporter implements it).
// Watch events are handled synchronously in arrival order, so per-object reports are ordered;
// the sink keeps only the latest per object.
//
// Imports: the kernel's log, sync/wire, ../client, ../reflector and ../manifests (labels);
// src/kube's rule forbids store, http, workflow, cli, modes, web and kube-sim. src/sync may not
// import kube/ at all, so the reporter meets these watchers only through StatusSink, and
// modes/krane.ts, their one importer outside src/kube, connects the two.
export * from './quantity';
export * from './pod';
export * from './sentinel';
export * from './instances';
export * from './sentinels';
export * from './autoscalers';

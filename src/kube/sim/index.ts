// Kubernetes API simulator (`unkey-infra kube-sim`).
//
// A real HTTP server that the unchanged @kubernetes/client-node talks to. It owns:
// - resources.ts: the served kinds (core v1 Namespace/Service/Pod/ConfigMap/Secret, apps/v1
//   StatefulSet/Deployment, policy/v1 PodDisruptionBudget, cilium.io/v2 CiliumNetworkPolicy)
//   and the discovery documents the client uses to map kinds to plural names;
// - store.ts: objects in memory, indexed by type → namespace → name, one cluster-wide
//   resourceVersion counter, a bounded event log per type (watch resume; older versions get
//   410 Expired), and an owner index (uid → dependents) for cascade deletion;
// - api.ts: the verbs, including server-side apply with per-manager field ownership
//   (fields.ts), merge/strategic/JSON patches (merge.ts), defaulting (defaults.ts), and 422
//   validation against kubernetes-models plus a hand-kept Cilium schema (validate.ts);
//   a write that changes nothing keeps its resourceVersion and emits no event;
// - controller.ts + pod-status.ts: StatefulSets and Deployments become pods that are Ready
//   after the ready delay; faults by image (`crash`, `pullfail`, `slow`, `oom`) or by the
//   admin endpoint; workload and PDB status follow the pods;
// - server.ts: REST paths, watch streams (JSON lines, bookmarks), admin under `/_sim`;
// - stats.ts: request counts by verb for benchmarks; kubeconfig.ts: client configuration.
//
// Concurrency: everything runs on the event loop and every write is synchronous, so a write,
// its event and its delivery to watchers happen in one step; the controller reacts on a later
// macrotask through a coalescing queue keyed by kind/namespace/name.
//
// Admin endpoints (outside /api, plain JSON):
//   GET  /_sim/stats               request counts: requests, byVerb, byResource, writes,
//                                  mutations (writes that changed state), noopWrites, errors
//   POST /_sim/stats/reset         zeroes them; answers { previous }
//   POST /_sim/faults              { namespace, name, fault: crash|pullfail|slow|oom|none } for
//                                  a workload (all its pods) or one pod; answers affected pods
//   GET  /_sim/faults              the active faults
//   POST /_sim/compact             drops watch history ({ dropWatches: true }: every
//                                  resourceVersion expires and open watches close → relist)
//   GET  /_sim/info                URL, resourceVersion, object counts
//
// Use: `const sim = new KubeSim({ readyDelayMs: 5 }); await sim.listen(0);` then
// `sim.kubeConfig()` for in-process clients, or `startKubeSim(cfg)` from src/modes.
export * from './types';
export * from './resources';
export * from './status';
export * from './selectors';
export { PATCH_TYPES, SimApi, type WriteOptions, type WriteResult, type ListOptions, type ListResult, type DeleteOptions } from './sim-api';
export { ObjectStore, type StoreOptions } from './object-store';
export { SimStats, type SimStatsSnapshot, type Verb } from './stats';
export { FAULTS, faultFromImage, isPodReady, type Fault } from './workloads/pod-status';
export { WorkloadController, templateHash, intOrPercent, type ControllerOptions } from './workloads/controller';
export { validateObject, selectorMatches } from './validate';
export { kubeconfigYaml, writeKubeconfig, simKubeConfig, SIM_TOKEN, SIM_CONTEXT } from './kubeconfig';
export { DeletionAudit, type DeletionEntry, type Actor } from './audit';
export { KubeSim, DEFAULT_SIM_OPTIONS, type KubeSimOptions } from './sim';

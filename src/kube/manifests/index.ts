// Manifests: pure functions from a desired state (src/sync/wire) to Kubernetes objects.
// No I/O here; controllers (src/kube/controller.ts) send what these return.
//
// - deployment.ts: headless Service + StatefulSet per deployment and region (namespace `unkey`).
// - sentinel.ts: Deployment + ClusterIP Service + PodDisruptionBudget per sentinel (`sentinel`).
// - gossip.ts: per-environment headless gossip Service + CiliumNetworkPolicy.
// - autoscaler.ts: the autoscaling/v2 HorizontalPodAutoscaler of an autoscaled deployment.
// - routes.ts: per-environment ConfigMap `routes-<env>` with the weighted backends and their
//   instances' stable addresses (the routing table the sentinels read).
// - hardening.ts: the securityContext every pod gets (the `restricted` Pod Security Standard)
//   and the writable /tmp of a read-only root.
// - labels.ts: the label contract (API.md) and krane's annotations; names.ts: id → object name.
// - hash.ts: canonical manifest hash, stored in an annotation so re-applying identical state can
//   be skipped without a request (see controller.ts for when the skip is trusted).
// - build.ts: `buildObjects(state, opts)`: the objects for any desired state, hashed.
// Every object carries `app.kubernetes.io/managed-by=krane`; controllers refuse to touch objects
// without it.
//
// Imports: src/sync/wire and node:crypto only, none of krane's I/O (that it stays pure is this
// folder's convention; the checked rule is src/kube's: never store, http, workflow, cli, modes,
// web or kube-sim). Imported by krane's apply controller, objects.ts, inventory and drift, and
// by ../status; kube-sim may not import it, so the simulator cannot share krane's idea of an
// object.
export * from './labels';
export * from './names';
export * from './types';
export * from './hash';
export * from './deployment';
export * from './sentinel';
export * from './gossip';
export * from './routes';
export * from './autoscaler';
export * from './build';
export * from './hardening';

// The Kubernetes side of krane: everything that talks to one region's API server.
//
// - manifests/: pure builders, desired state → objects (labels, names, hashes; a sentinel
//   Deployment carries the spec hash ctrl sent, unkey.com/spec-hash).
// - client.ts: KubeClient, the @kubernetes/client-node 1.4 wrapper (server-side apply as field
//   manager `krane`, get, uid-guarded delete, paged list, watch) with request counts;
//   loadKubeConfig (told by config.ts whether krane runs in a pod: this folder reads no
//   environment); apiFailure, the facts of a failed call.
// - classify.ts: pure, table-tested: what a refusal means (permanent for this object, or retry
//   after a wait, honouring Retry-After; an immutable-field 422 means recreate).
//   errors.ts: the coded KubeApplyError / KubeRetryError built from that verdict.
// - inventory.ts + apply-controller.ts (+ object-apply.ts, one object's apply, and objects.ts
//   helpers): ApplyController, the ResourceController the change-feed watcher drives. Keyed by
//   object; per-resource calls are serialised, different resources run concurrently. It never
//   modifies or deletes an object that is not krane's: ownership.ts says which are (the
//   `app.kubernetes.io/managed-by=krane` label, or krane's own server-side apply entry in
//   managedFields, which survives a label removed by hand). GC passes go through gc-brake.ts
//   (pure decision + the held/approved sets): a pass deleting too much waits for an operator.
// - outcomes.ts: ApplyOutcomes, each resource's failure or success as an apply report.
// - reflector.ts: list + watch with bookmarks, 410 relist, backoff and periodic relist.
// - drift.ts: watches of every managed kind feeding ApplyController.observe, which keeps the
//   inventory current and re-applies a resource whose objects were deleted or changed by hand
//   (per-resource serialised with the watcher's own applies). drift-check.ts: pure, what counts
//   as drift (krane's labels and annotations; for kinds with a generation, the body as krane's
//   apply left it, spec.replicas aside where an autoscaler owns them, and never below its
//   minReplicas; the values krane sent for Service and ConfigMap). repair.ts: the debounced
//   repair queue and the counters (krane_drift_repairs_total{kind}, the heartbeat's `drift`,
//   GET /v1/regions), which count only objects a repair changed.
// - kind-wait.ts: resources whose kind the cluster does not serve (no Cilium CRD): reported
//   once, retried every 30 s, healed when the CRD appears.
// - credentials.ts (pure: parse the --sentinel-secrets-file, build the Secret) and
//   credentials-keeper.ts: the Secret sentinel-credentials in namespace sentinel, watched by
//   name and kept equal to the file (values never logged; only the leader writes).
// - status/: pod and sentinel status derivation and the watchers feeding the reporter.
// - metrics.ts: Prometheus metrics over the counters above (and the GC brake).
// - leader.ts: LeaderElector, Lease `krane-<region>` in namespace `unkey`; krane starts the feed
//   watcher only while it leads (client-go's scheme: local observed time, resourceVersion writes);
//   its `epoch` (the Lease's transitions it wrote) orders the leader's sentinel reports.
//
// May import: the kernel (src/errors.ts, src/log.ts, src/net.ts), src/sync/wire (the protocol
// and the interfaces it implements), packages. Never src/store (krane has no database), never
// src/http, src/workflow, src/modes, and never src/kube-sim: the simulator used by tests and
// `dev` shares nothing with this code but HTTP (.dependency-cruiser.cjs checks).
export * from './client';
export * from './classify';
export * from './errors';
export * from './gc-brake';
export * from './outcomes';
export * from './inventory';
export * from './ownership';
export * from './object-apply';
export * from './apply-controller';
export * from './reflector';
export * from './drift';
export * from './drift-check';
export * from './repair';
export * from './kind-wait';
export * from './credentials';
export * from './credentials-keeper';
export * from './metrics';
export * as manifests from './manifests';
export * as status from './status';

// The Kubernetes side of krane: everything that talks to one region's API server.
//
// - manifests/: pure builders, desired state → objects (labels, names, hashes).
// - api.ts: @kubernetes/client-node 1.4 wrapper (server-side apply as field manager `krane`,
//   get, uid-guarded delete, paged list, watch) with request counts; loadKubeConfig.
// - inventory.ts + controller.ts: KubeController, the ResourceController the change-feed
//   watcher drives. Keyed by object; safe for concurrent calls on different resources. It never
//   modifies or deletes an object without `app.kubernetes.io/managed-by=krane`.
// - reflector.ts: list + watch with bookmarks, 410 relist, backoff and periodic relist.
// - drift.ts: watches of every managed kind feeding KubeController.observe, which keeps the
//   inventory current and re-applies a resource whose objects were deleted or re-specced by
//   hand (per-resource serialised with the watcher's own applies).
// - status/: pod and sentinel status derivation and the watchers feeding the reporter.
// - metrics.ts: Prometheus gauges over the counters above.
// - leader.ts: LeaderElector, Lease `krane-<region>` in namespace `unkey`; krane starts the feed
//   watcher only while it leads (client-go's scheme: local observed time, resourceVersion writes).
// The simulator used by tests and `dev` lives in sim/ and shares nothing with this code but HTTP.
export * from './api';
export * from './inventory';
export * from './controller';
export * from './reflector';
export * from './drift';
export * from './metrics';
export * as manifests from './manifests';
export * as status from './status';

// Kubernetes API simulator (`unkey-infra kube-sim`).
//
// A real HTTP server that the unchanged @kubernetes/client-node and the real kubectl talk to,
// answering as an API server does (status codes, reasons and Status messages included), and
// strict where real clusters are strict, because every krane claim rests on it. Parts:
// - resources.ts: the served kinds (core v1 Namespace/Service/Pod/ConfigMap/Secret/Event/
//   ResourceQuota/ServiceAccount, apps/v1 StatefulSet/Deployment, policy/v1
//   PodDisruptionBudget, networking.k8s.io/v1 NetworkPolicy (stored, not enforced),
//   coordination.k8s.io/v1 Lease, rbac.authorization.k8s.io/v1 roles and
//   bindings, apiextensions.k8s.io/v1 CustomResourceDefinition, authorization.k8s.io/v1
//   SelfSubjectAccessReview, and the custom cilium.io/v2 CiliumNetworkPolicy) and discovery,
//   with the status, scale (autoscaling/v1) and pods/log subresources;
// - the request path, in the API server's filter order: tls.ts (TLS and plain HTTP on one
//   port: kubectl sends tokens only over TLS), auth.ts (bearer tokens: the admin in
//   system:masters, ServiceAccount tokens, anonymous; 401 for an unknown token), access.ts
//   (the request's authorizer attributes and SelfSubjectAccessReview), rbac.ts (RBAC from
//   stored Roles/Bindings, the bootstrap policy, the 403 texts), params.ts (query parameters
//   as apimachinery's parameter codec reads them: booleans, integers, list options);
// - crds.ts: CRDs as stored objects; a custom resource is served only while its CRD exists
//   (KubeSim option `cilium`, `kube-sim --no-cilium`), deleting the CRD deletes its objects;
// - object-store.ts: objects in memory by type → namespace → name, one cluster-wide
//   resourceVersion counter, a bounded event log per type (watch resume; older versions get
//   410 Expired), and an owner index (uid → dependents) for cascades;
// - sim-api.ts (SimApi): the verbs, with server-side apply and field ownership (fields.ts),
//   patches (merge.ts), defaulting (defaults.ts), 422 validation against kubernetes-models
//   and @kubernetes-models/cilium and the API server's immutability rules (validate.ts),
//   admission (admission.ts: missing or terminating namespace, Pod Security Admission from
//   namespace labels (pod-security-policy.ts; the checks in pod-security.ts), ResourceQuota object counts (quota.ts),
//   resourceVersion required on Lease updates, etcd's 1.5 MiB object limit), scale (scale.ts)
//   and deletion (deletion.ts: preconditions, finalizers, owner cascades, namespace
//   termination); a write that changes nothing keeps its resourceVersion and emits no event;
// - workloads/: the built-in controllers. Pure planners decide (statefulset.ts,
//   deployment.ts, pdb.ts, scheduler.ts, pod-status.ts), controller.ts and pods.ts carry
//   out (pods bound to a node with room, capacity.ts with the `nodes` option, else nodes
//   without limit; pods Ready after the ready delay, faults by image `crash`, `pullfail`, `slow`, `oom`
//   or by the admin API; image gates that hold pods until a test releases them (gates.ts);
//   readiness and liveness probes against each image's contract in
//   probes.ts; pods refused by admission are FailedCreate events and a Deployment's
//   ReplicaFailure), events.ts writes core/v1 Events (bounded, repeats counted);
//   hpa.ts autoscales (autoscaling/v2, CPU simulated by image tag `cpuhot`/`cpucold`);
// - server.ts + requests.ts + watch.ts: REST paths, Tables for kubectl (tables.ts), logs
//   (logs.ts, text/plain, follow), watch streams, OpenAPI v2/v3 (openapi/, generated from
//   the official schemas by scripts/gen-openapi.ts), 413 for bodies over 3 MiB, and the
//   traffic controls (chaos.ts: rate limit and fault injection);
// - denials.ts: writes refused as a validating admission webhook refuses them (tests);
// - audit.ts: the deletion audit log; admin.ts: the admin API below; stats.ts: request
//   counts for benchmarks; kubeconfig.ts: client configuration (admin or a ServiceAccount).
//
// Identities: `sim.kubeConfig()` is the admin (kubernetes-admin, system:masters);
// `sim.serviceAccountUser(ns, name)` mints a token for an existing ServiceAccount
// (system:serviceaccount:<ns>:<name>) to pass to kubeConfig() or writeKubeconfig();
// `sim.applyManifests(objects)` server-side applies objects as the admin (e.g.
// deploy/krane-rbac.yaml, parsed by src/modes/kube-sim.ts). The admin API under /_sim is not
// authenticated (a test control surface on loopback, not part of the Kubernetes API).
//
// Concurrency: everything runs on the event loop and every write is synchronous, so a write,
// its event and its delivery to watchers happen in one step; controllers react on a later
// macrotask through coalescing queues keyed by kind/namespace/name (quotas by namespace).
//
// Admin API (outside /api, plain JSON; a bad body gets 400 naming every problem):
//   GET  /_sim/stats, POST /_sim/stats/reset   request counts by verb and resource, writes,
//                                               mutations, noopWrites, errors
//   POST /_sim/faults {namespace, name, fault}  fault: crash|pullfail|slow|oom|none, for a
//   GET  /_sim/faults                           workload (all its pods) or one pod
//   POST /_sim/gates {image} | {namespace, name}, DELETE /_sim/gates (same body), GET /_sim/gates
//                                               hold pods of an image or of a workload before
//                                               their containers start (not Ready) until
//                                               released: a test makes one workload ready after
//                                               another (workloads/gates.ts; sim.holdImage,
//                                               sim.holdWorkload in-process)
//   POST /_sim/denials {namespace, name, reason}, DELETE /_sim/denials {namespace, name},
//   GET /_sim/denials                            API writes of that object (any kind) get 403
//                                               "admission webhook ... denied the request",
//                                               as a policy webhook refuses them (denials.ts)
//   POST /_sim/compact {dropWatches?}           drops watch history (410 → relist)
//   GET  /_sim/info                             URL, resourceVersion, object counts
//   POST /_sim/chaos {mode, ratio?, durationMs, latencyMs?, retryAfterSeconds?, verbs?,
//        resources?}                             for durationMs, answer a share (ratio, default
//                                               1) of API requests with 500 (mode error), 429
//                                               + Retry-After (throttle) or a delay (latency);
//                                               verbs: get list watch create update patch
//                                               apply delete deletecollection; resources:
//                                               plurals, `pods/status`, …
//   GET  /_sim/chaos, DELETE /_sim/chaos        the rule and counts of injected answers; end it
//   POST /_sim/ratelimit {qps, burst?, retryAfterSeconds?}   token bucket over API requests;
//   GET/DELETE /_sim/ratelimit                  past it 429 + Retry-After, as the API server's
//                                               flow control answers (plain text, no Status)
//   GET  /_sim/audit/deletions?since=SEQ        deletions, oldest first: seq, time, cause
//                                               (request, collection, namespace, cascade,
//                                               controller), apiVersion, kind, namespace, name,
//                                               uid, labels, userAgent, manager, owner (for
//                                               cascades), propagationPolicy, held (finalizers);
//                                               bounded (auditLimit), `dropped` counts the rest
//   DELETE /_sim/audit/deletions, POST /_sim/audit/deletions/reset   empty it
//
// Imports: only the kernel (src/log.ts, src/net.ts) and packages; never krane's src/kube/*
// (the simulator and krane share no code) and never the store.
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
export { HpaController, simulatedCpuLoad, type HpaOptions } from './workloads/hpa';
export { NodePool } from './workloads/capacity';
export { DEFAULT_NODE_SHAPE, fitErrorMessage, parseQuantity, type NodeShape } from './workloads/scheduler';
export { validateObject, selectorMatches } from './validate';
export { kubeconfigYaml, writeKubeconfig, simKubeConfig, SIM_TOKEN, SIM_CONTEXT, type KubeconfigUser } from './kubeconfig';
export { ADMIN, serviceAccountInfo, type UserInfo } from './auth';
export { CILIUM_POLICY_CRD } from './crds';
export { DeletionAudit, type DeletionEntry, type Actor } from './audit';
export { KubeSim, DEFAULT_SIM_OPTIONS, type KubeSimOptions } from './sim';

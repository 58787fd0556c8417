// The wire between ctrl and krane: the one module both ends share, and a leaf (it imports
// nothing of ours, only zod and node:crypto). Changing it changes the protocol, so it stays small.
//
// - protocol.ts: zod schemas of every change-feed line, the desired states they carry, krane's
//   status reports (instances, sentinels, apply outcomes, the GC brake) and the desired-state
//   lookups. Both sides parse with them, so an unknown or malformed line is an error on either
//   side, never skipped. Hence a new line type goes only to agents that ask for it by a query
//   parameter (the `handover` line: `handover=1`), which a ctrl before it ignores (unknown
//   query parameters are dropped); an old krane never asks and never gets one.
// - spec-hash.ts: sentinelSpecHash, which ctrl sends with a sentinel's desired state and
//   compares with what krane reports back (READY means the cluster runs exactly that spec).
// - controller.ts: ResourceController, what krane's Kubernetes side implements for the feed's
//   dispatcher (apply, delete, gc); PermanentError (retrying cannot help this object: report
//   it and move on) and RetryLaterError (wait, at least as long as the API server asked).
// - status-sink.ts: StatusSink, what krane's observers write to and its reporter implements.
// - safe.ts: the rules every request body keeps before its schema reads it (no NUL or lone
//   surrogate anywhere, bounded nesting) and the shared refinements int32() and saneDate().
//
// May import: zod, node built-ins. Imported by: src/sync (both ends), src/kube (krane's side),
// src/http, src/workflow (the spec hash).
export * from './protocol';
export * from './spec-hash';
export * from './controller';
export * from './status-sink';
export * from './safe';

// The wire between ctrl and krane: the one module both ends share, and a leaf (it imports
// nothing of ours, only zod). Changing it changes the protocol, so it stays small.
//
// - protocol.ts: zod schemas of every change-feed line, the desired states they carry, krane's
//   status reports and the desired-state lookups. Both sides parse with them, so an unknown or
//   malformed line is an error on either side, never skipped.
// - controller.ts: ResourceController, what krane's Kubernetes side implements for the feed's
//   dispatcher (apply, delete, gc), and PermanentError, how it says retrying cannot help.
// - status-sink.ts: StatusSink, what krane's status watchers write to and its reporter
//   implements.
//
// May import: zod. Imported by: src/sync (both ends), src/kube (krane's side), src/http.
export * from './protocol';
export * from './controller';
export * from './status-sink';

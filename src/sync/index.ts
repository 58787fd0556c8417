// The change feed: how desired state travels from ctrl's database to krane.
//
// Wire: ./wire (a leaf module, its own note) holds the zod schemas of every stream line,
// desired state and status report, and the ResourceController and StatusSink interfaces that
// krane's Kubernetes side implements and calls. The cursor (cursor.ts) is the opaque `epoch:txid:id`; only ctrl parses it.
//
// ctrl side (one Tailer per process, created by createFeed in feed.ts):
// - The outbox (store/changes.ts) is read only where settled: rows whose transaction is older
//   than every running one (txid < pg_snapshot_xmin), in (txid, id) order, so a commit that
//   lands out of order is waited for, never skipped.
// - tailer.ts polls once per doorbell (NOTIFY from every change) or backstop tick, whatever
//   the number of agents, appends to the buffer.ts (per-region index, bounded by entries and
//   by bytes: streams behind it read the table), and serves the streams waiting on the regions
//   touched: fanout.ts pushes the new lines straight into their sockets (one chunk per group
//   of streams at one position, one synchronous loop of writes), waking only a stream it
//   cannot serve (its socket must drain, or it is behind the buffer) to read for itself.
//   Desired state and the serialized line of a buffered row are built once and shared by every
//   stream of the region. It also measures settle lag; settle.ts names the blocking backend
//   past a threshold.
//   The epoch follows the database's history: every poll checks that the epoch was issued on
//   this history (system identifier and timeline; sql/0030_feed_history.sql) and renews it
//   when not (a promoted standby, a restore), so no cursor of a lost history is ever resumed.
// - feed.ts holds the stream policy: cursor checks (other epoch, from the future, older than
//   retention: 410), a per-holder (agent token) stream limit (429) and cut(), and fair,
//   bounded snapshot slots (slots.ts, 503 past the region's queue).
// - stream.ts serves one long-poll response: snapshot (one REPEATABLE READ transaction whose
//   head cursor comes from the same snapshot), then incremental events from the buffer (or from
//   the table while behind it, retention judged in the read's own snapshot), heartbeats, and
//   `end` with the cursor; to an agent that asked (handover=1), `handover` with the cursor
//   instead, after which it goes on sending changes until the agent closes it or a grace
//   passes. A client that takes no bytes for the write-stall limit is cut.
//   desired.ts maps rows to the wire's desired states (pure).
// - This folder knows no HTTP: src/http/cluster-feed.ts authenticates, calls feed.open() and
//   writes the lines into the response. sync may import the kernel (errors, ids, log, health),
//   store, tracing and its own wire; never http, workflow or modes.
//
// krane side:
// - watcher.ts (its options: watcher-options.ts) holds the cursor and one stream at a time, reconnecting with jittered backoff,
//   except across a handover: it opens the next poll at once and reads the old one until the
//   next is answered (overlap.ts: the rules that keep the cursor moving forward past handled
//   events only); cursor-tracker.ts commits incremental cursors in order; ndjson.ts's
//   LineReader hands out the lines already received in one synchronous pass;
//   dispatcher.ts runs events one at a time per resource (newest state wins while waiting) and
//   different resources concurrently up to a bound, calling the ResourceController
//   (wire/controller.ts). Cursors are committed only past handled events; GC runs only after a
//   complete snapshot whose events were all handled.
//
// Tracing (src/tracing): an outbox row carries the traceparent of the write that made it; an
// incremental `change` line repeats it (coalesced: the newest row's), and the dispatcher runs
// a traced event inside <kind>.apply.<region>, a child of that write. Snapshot lines carry
// none: they are a resource's state, not a write. With tracing off no line has the field.
//
// stackless.ts: the error, made without a stack, that a poll's end is told with on both sides
// (one per poll; Node reads a destroy reason's stack).
//
// reporter.ts and status*.ts (krane's status reports) belong to the reporter's part.
// liveness.ts (a leaf: the heartbeat schema and the pure online/offline, lag and grace rules)
// and heartbeat.ts (krane's sender: every 10 s and after each committed cursor) are the
// regions part's.
export * from './wire';
export * from './cursor';
export * from './desired';
export { ChangeBuffer, type BufferedChange } from './buffer';
export { Tailer, type TailerOptions, type WakeReason, DEFAULT_POLL_MS, DEFAULT_BUFFER_SIZE } from './tailer';
export { runStream, StreamAborted, type LineSink, type StreamDeps, type StreamRequest } from './stream';
export { FairSlots } from './slots';
export { SettleWatch, DEFAULT_SETTLE_LAG_MAX_MS } from './settle';
export * from './feed';
export { Dispatcher, type DispatcherOptions } from './dispatcher';
export { ndjsonLines, LineReader, CutStreamError } from './ndjson';
export * from './watcher';

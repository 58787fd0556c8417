// The durable execution engine: Restate's programming model on Postgres tables
// (sql/0002_engine.sql, sql/0003_engine_faults.sql). It knows nothing about deployments.
//
// May import: the kernel (src/errors, ids, log, health), the database client
// (src/store/db.ts, src/store/retryable.ts), zod, p-retry, prom-client. Never http/, never
// modes/, never other workflow code (checked by .dependency-cruiser.cjs).
//
// Modules (no cycle among them; types.ts is the leaf)
// - types.ts: definition shapes, handler lookup, execution targets. definitions.ts: handler(),
//   defineService, defineObject. context.ts: what a handler gets. durable-promise.ts.
// - engine.ts: the client face (start, call, send, result, awakeables, cancel, views, purge);
//   worker.ts: executions in memory, notifications (the Runtime, declared in runtime.ts);
//   lazy-start.ts: a call's start carried by its first write; claims.ts: when and how
//   much to claim (timers, poll), lease renewal; results.ts: waiters.
// - execution-core.ts (positions, replay, suspension) + execution.ts (the operations);
//   finish-write.ts (writing the outcome); step-attempts.ts (a step's retries); outage.ts
//   (waiting out the database).
// - invocation-store.ts (invocation rows, claims, leases), journal-store.ts (journal and
//   object state) and batch-store.ts (the many-member statements below): the engine's only
//   SQL. views.ts + redact.ts: operator views.
// - group-commit.ts: requests that many executions make at once share one statement;
//   batches.ts holds the process's three (completed steps, starts, finishes); a batch of one
//   (a lone invocation's every request) is the single-row statement, sent without waiting for
//   the next event-loop turn when nothing else is in flight.
// - trace.ts: the opaque trace carrier of an invocation (TraceHooks given as an option; the
//   engine imports no tracing code): stored at start, current around every execution.
//
// Faults
// - Infrastructure errors never reach handler code: bookkeeping writes retry (backoff, no
//   limit) while the database is away, a retry recognising its own committed write; a step
//   body failing because the database is away waits it out without using an attempt. What is
//   retryable is the one table in src/store/retryable.ts.
// - A lazy call (engine.call with no idempotency key, key lock, delay, transaction alongside or
//   trace: lazy-start.ts) is not recorded before it runs. The database away at its first write
//   does not fail it: its first step body has run, and the write that carries its start waits
//   the outage out like any other (no limit), and so does its caller; a crash meanwhile loses
//   it with its caller. A caller that needs "recorded before anything runs, or an error at
//   once" passes an idempotency key (the eager start, which fails with the database's error
//   within START_CHECK_MS and runs nothing). An input jsonb refuses goes the eager way too;
//   engine.stop() writes a lazy call's start before it hands leases back, and drops one still
//   unwritten at its deadline (a start already sent may commit: resumed after its lease).
// - Several replicas on one database: a replica that takes over an invocation another holds
//   tells it (NOTIFY s:) so the stale copy is dropped, and a caller's call() settles from the
//   stored outcome wherever the invocation finished.
// - Secrets: handler({ …, secret: { input, output } }) and defineObject(…, { secretState }) mark
//   fields that listInvocations/getInvocation show as REDACTED; handlers see real values.
//
// Model
// - Services (stateless handlers) and virtual objects (keyed, with K/V state). An object's
//   *exclusive* handlers run one at a time per key, in arrival order, and keep the key while
//   suspended; its *shared* handlers run concurrently with them (that is how a NotifyReady
//   reaches a suspended Deploy). Different keys run concurrently. Inputs and outputs are zod
//   schemas, checked when an invocation starts and when it returns.
// - An invocation is a row (target, key, input, status, result/error, idempotency key, lease).
//   Its journal is rows (invocation, seq). Handler code re-executes on resume; journaled steps
//   are replayed, not re-run; a different step kind or name at a position fails the invocation
//   with ERR_ENGINE_NON_DETERMINISM.
// - ctx.run(name, fn, { maxAttempts, initialDelayMs, maxDelayMs, factor }) retries with
//   backoff (p-retry); TerminalError is final, and so is the last failed attempt.
//   ctx.runTx(name, tx => …) is a database step: its writes and its journal entry commit in one
//   transaction, so they happen exactly once (use it for state rows + outbox rows). Other side
//   effects are at least once and must be idempotent.
// - ctx.sleep(name, ms), ctx.awakeable() → { id, promise } (completed from anywhere with
//   engine.resolveAwakeable / rejectAwakeable, also before the waiter suspends), ctx.get/set/
//   clear (object state; set/clear only in exclusive handlers), ctx.call (a future of the
//   result), ctx.send (one-way, optionally delayed), ctx.all, ctx.allSettled, ctx.race,
//   promise.orTimeout(ms) (TimeoutError). State operations apply in call order, awaited or not.
//   Anything non-deterministic (Date.now(), random ids, reads of other tables) goes in a step.
// - engine.cancel(id): pending awaits of the invocation reject with CancelledError (or its next
//   suspension does), so try/finally compensations run; calls it waits on are cancelled too.
//
// Execution and concurrency
// - Workers claim due rows (`due_at <= now()`) with FOR UPDATE SKIP LOCKED and a lease
//   (lease_epoch increments per claim) that a timer renews. Every journal write is fenced on
//   (id, lease_epoch, running) with FOR KEY SHARE, so a process that lost its lease can never
//   record a step, and a claim cannot overlap a write in flight. A crashed process's
//   invocations are claimed by anyone once the lease expires and replayed from the journal.
// - Hot path: a call/send from a process with spare capacity inserts the invocation already
//   claimed and runs it at once (a call with no idempotency key, key lock, delay or trace
//   inserts it with its first journal entry or its finish: lazy-start.ts); between steps the
//   execution stays in memory (one fenced INSERT per step, no re-reads). Group commit: the
//   steps, starts and finishes of all the executions of a process that arrive while one such
//   statement is in flight go together in the next (a lone one goes at once, as the single-row
//   statement), each member with its own fence and answer; a batch that fails for one member's
//   reason is sent again member by member. An execution blocked only on completions suspends (row
//   `suspended`, lease released, no worker slot held) but stays parked in memory: a wake-up
//   from this process (awakeable resolved here, a child finishing here) claims it back in the
//   same statement and continues the same call stack; a wake-up from another process NOTIFYs
//   `unkey_engine` and the parking process claims it. Others take it after stealAfterMs, and
//   a backstop poll (pollMs) finds due timers, delayed sends and expired leases.
// - Exclusive ordering: engine_object_keys(service, key) holds an arrival counter and the
//   holder. Starts lock that row, so arrival numbers follow commit order; finishing hands the
//   key to the lowest queued arrival (and claims it for the finishing process when it can).
//
// - Retention: finished invocations, their journals and so their idempotency keys are deleted
//   retentionMs (default 7 days) after they end (engine.purge runs every minute).
// - A worker claims only invocations of services it has registered, so every ctrl replica
//   must register every definition (a replica without one leaves its invocations to others).
//
// Use
//   const engine = createEngine({ sql, logger, concurrency, leaseMs, pollMs, registry });
//   const Greeter = engine.service('greeter', { greet: handler({ input, output }, async (ctx, x) => …) });
//   const Counter = engine.object('counter', { exclusive: { add }, shared: { get } });
//   // or define in a module without an engine and register later:
//   //   export const Deploy = defineObject('deploy', { exclusive: { … } }); engine.register(Deploy);
//   await engine.start();
//   await engine.result(id); await engine.state(Counter, 'a');
//   await engine.call(Counter, 'add', 1, { key: 'a', idempotencyKey: 'req-1' });
//   const { id } = await engine.send(Greeter, 'greet', 'x', { delayMs: 1000 });
//   await engine.resolveAwakeable(awakeableId, value); await engine.cancel(id);
//   await engine.listInvocations({ status: 'running', target: 'counter' }); await engine.getInvocation(id);
//   routes' readiness: engine.readinessCheck();  on SIGTERM: await engine.stop() (hands leases back).
//   Metrics (with `registry`): engine_invocations_finished_total{service,handler,status},
//   engine_leases_lost_total, engine_step_retries_total{service},
//   engine_executions{state=running|parked}, and from the database at scrape time
//   engine_invocations{status} and engine_overdue_seconds{status} (unfinished ones).
export { createEngine, Engine } from './engine';
export type { EngineOptions, ClientOptions, SendClientOptions, InvocationView, JournalEntryView } from './engine';
export { handler, defineService, defineObject } from './definitions';
export type { TraceHooks, AnyDef, HandlerDef, HandlerSecrets, ObjectDef, ObjectOptions, SecretPath, ServiceDef, HandlerName, InputOf, OutputOf, RunOptions } from './types';
export { REDACTED } from './redact';
export { Context } from './context';
export type { CallOptions, SendOptions } from './context';
export { DurablePromise } from './durable-promise';
export { TerminalError, CancelledError, TimeoutError, NonDeterminismError } from './errors';
export type { InvocationStatus } from './invocation-store';

-- Tracing (issue 17). All three are written only while tracing is on.
--
-- engine_trace_contexts: the trace carrier of an invocation (opaque to the engine, see
-- src/tracing/durable.ts), written in the statement that starts it, read when a process that
-- did not start it executes it (a replay after a crash, another replica), purged with it.
-- A table of its own rather than a column: engine_start stays as it is, and an untraced start
-- costs nothing.
CREATE TABLE engine_trace_contexts (
  invocation_id text PRIMARY KEY,
  carrier text NOT NULL
);

-- Adding a nullable column is a catalog change, but it takes an exclusive lock on each table.
-- During a rolling upgrade an older replica may be deploying, locking deployments and then
-- writing deployment_changes: the tables are altered in that same order (no deadlock), and a
-- lock that cannot be had soon fails the migration (retried by the next start) instead of
-- queueing every feed read and write behind it.
SET LOCAL lock_timeout = '5s';

-- The trace of a deployment's workflow (GET /v1/deployments/:id shows its trace id).
ALTER TABLE deployments ADD COLUMN traceparent text;

-- The W3C traceparent of the write that caused a change, so the agent's apply joins its trace.
ALTER TABLE deployment_changes ADD COLUMN traceparent text;

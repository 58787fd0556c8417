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

-- The W3C traceparent of the write that caused a change, so the agent's apply joins its trace.
ALTER TABLE deployment_changes ADD COLUMN traceparent text;

-- The trace of a deployment's workflow (GET /v1/deployments/:id shows its trace id).
ALTER TABLE deployments ADD COLUMN traceparent text;

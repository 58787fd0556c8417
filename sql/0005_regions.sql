-- Agent liveness per region (DESIGN section 10). A region exists when it has an agent token;
-- this table only says when its agent was last heard from and what it reported. One row per
-- region, written by heartbeats and by the ctrl replica holding the agent's open stream.
-- `status` is the last status announced as a `region.status` event: replicas move it with a
-- conditional UPDATE, so each change is announced once however many replicas notice it.
CREATE TABLE region_liveness (
  region             text PRIMARY KEY CHECK (region ~ '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$'),
  last_seen_at       timestamptz,
  agent_id           text,
  agent_version      text,
  agent_leader       boolean NOT NULL DEFAULT false,
  -- The agent's committed feed cursor (opaque EPOCH:TXID:ID); lag is counted past it.
  cursor             text,
  objects            jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(objects) = 'object'),
  last_full_sync_at  timestamptz,
  status             text NOT NULL DEFAULT 'never_seen' CHECK (status IN ('online','offline','never_seen')),
  status_changed_at  timestamptz NOT NULL DEFAULT now()
);

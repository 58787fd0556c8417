-- Tenants, scoped API keys and the audit trail (issue 26).
--
-- Tenancy rows are created through the API now. Deleting a workspace or environment is soft
-- (deleted_at): deployments keep their foreign keys and audit rows keep naming real things,
-- while every read and list skips deleted rows. What an environment runs in the clusters
-- (sentinels, gossip policies, its routing table) is removed through the outbox at deletion.
-- The (app, slug) uniqueness moves to live rows only, so a slug can be used again.
--
-- Each project gets one app (its `default`), made with the project: the API speaks of
-- workspaces, projects and environments; the app is the label level the clusters carry.
SET LOCAL lock_timeout = '5s';

ALTER TABLE workspaces ADD COLUMN deleted_at timestamptz;
ALTER TABLE projects ADD COLUMN deleted_at timestamptz;
ALTER TABLE environments ADD COLUMN deleted_at timestamptz;
-- Regions an environment deploys to when a deployment names none; empty: the caller must name them.
ALTER TABLE environments ADD COLUMN regions text[] NOT NULL DEFAULT '{}';
-- Null: the generated `<app>-<slug>.<apex>` (src/workflow/traffic.ts).
ALTER TABLE environments ADD COLUMN hostname text CHECK (hostname ~ '^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$');
ALTER TABLE environments DROP CONSTRAINT environments_app_id_slug_key;
CREATE UNIQUE INDEX environments_live_slug_idx ON environments (app_id, slug) WHERE deleted_at IS NULL;
CREATE UNIQUE INDEX environments_live_hostname_idx ON environments (hostname) WHERE deleted_at IS NULL AND hostname IS NOT NULL;
CREATE INDEX projects_workspace_idx ON projects (workspace_id);
CREATE INDEX environments_project_idx ON environments (project_id);

-- Scoped API keys: stored as SHA-256 of the clear key (32 random bytes, shown once). The scope
-- narrows from workspace to project to environment; a narrower level needs the wider one.
CREATE TABLE api_keys (
  id              text PRIMARY KEY,
  name            text NOT NULL CHECK (name <> ''),
  key_hash        text NOT NULL UNIQUE,
  workspace_id    text NOT NULL REFERENCES workspaces(id),
  project_id      text REFERENCES projects(id),
  environment_id  text REFERENCES environments(id),
  permissions     text[] NOT NULL,
  expires_at      timestamptz,
  created_by      text NOT NULL,
  created_at      timestamptz NOT NULL DEFAULT now(),
  revoked_at      timestamptz,
  CHECK (environment_id IS NULL OR project_id IS NOT NULL)
);
CREATE INDEX api_keys_workspace_idx ON api_keys (workspace_id);

-- The audit trail: one row per mutating call and per refused attempt. A change's row is
-- written in the change's own transaction. The scope columns are the target's (or, for a
-- refused key, the key's own), so a scoped reader sees exactly its scope's rows. `id` is a
-- sequence so pages are keyset (id descending) and stable under concurrent inserts.
CREATE TABLE audit_log (
  id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  at              timestamptz NOT NULL DEFAULT now(),
  actor_type      text NOT NULL CHECK (actor_type IN ('admin','key','agent','anonymous')),
  actor_id        text,
  action          text NOT NULL CHECK (action <> ''),
  target          text,
  outcome         text NOT NULL CHECK (outcome IN ('ok','denied','invalid','failed')),
  request_id      text,
  trace_id        text,
  source_ip       text,
  workspace_id    text,
  project_id      text,
  environment_id  text
);
CREATE INDEX audit_log_at_idx ON audit_log (at);
CREATE INDEX audit_log_workspace_idx ON audit_log (workspace_id, id DESC);
CREATE INDEX audit_log_actor_idx ON audit_log (actor_id, id DESC);
CREATE INDEX audit_log_target_idx ON audit_log (target, id DESC);

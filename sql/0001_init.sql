-- Core schema: tenancy scopes, deployments and their per-region topology, sentinels, cilium
-- policies, reported instances, domains, and the deployment_changes outbox.
-- Enumerations are CHECK constraints rather than enum types: adding a value later is a plain
-- constraint swap inside a transaction, with no ALTER TYPE restrictions.

CREATE TABLE workspaces (
  id          text PRIMARY KEY,
  name        text NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE projects (
  id            text PRIMARY KEY,
  workspace_id  text NOT NULL REFERENCES workspaces(id),
  name          text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE apps (
  id            text PRIMARY KEY,
  workspace_id  text NOT NULL REFERENCES workspaces(id),
  project_id    text NOT NULL REFERENCES projects(id),
  name          text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE environments (
  id            text PRIMARY KEY,
  workspace_id  text NOT NULL REFERENCES workspaces(id),
  project_id    text NOT NULL REFERENCES projects(id),
  app_id        text NOT NULL REFERENCES apps(id),
  slug          text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  UNIQUE (app_id, slug)
);

CREATE TABLE deployments (
  id               text PRIMARY KEY,
  workspace_id     text NOT NULL REFERENCES workspaces(id),
  project_id       text NOT NULL REFERENCES projects(id),
  app_id           text NOT NULL REFERENCES apps(id),
  environment_id   text NOT NULL REFERENCES environments(id),
  image            text,
  build_context    text,
  cpu_millicores   integer NOT NULL CHECK (cpu_millicores BETWEEN 1 AND 256000),
  memory_mib       integer NOT NULL CHECK (memory_mib BETWEEN 1 AND 1048576),
  replicas         integer NOT NULL CHECK (replicas BETWEEN 0 AND 1000),
  port             integer NOT NULL CHECK (port BETWEEN 1 AND 65535),
  command          jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(command) = 'array'),
  env              jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(env) = 'object'),
  regions          text[] NOT NULL CHECK (cardinality(regions) > 0),
  status           text NOT NULL DEFAULT 'pending'
                   CHECK (status IN ('pending','building','deploying','network','ready','failed','stopped','superseded')),
  desired_state    text NOT NULL DEFAULT 'running' CHECK (desired_state IN ('running','stopped')),
  error            text,
  rolled_back_from text REFERENCES deployments(id),
  created_at       timestamptz NOT NULL DEFAULT now(),
  updated_at       timestamptz NOT NULL DEFAULT now(),
  CHECK (image IS NOT NULL OR build_context IS NOT NULL)
);
CREATE INDEX deployments_environment_idx ON deployments (environment_id, created_at DESC);

CREATE TABLE deployment_topology (
  deployment_id   text NOT NULL REFERENCES deployments(id) ON DELETE CASCADE,
  region          text NOT NULL CHECK (region ~ '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$'),
  workspace_id    text NOT NULL REFERENCES workspaces(id),
  replicas        integer NOT NULL CHECK (replicas BETWEEN 0 AND 1000),
  desired_status  text NOT NULL DEFAULT 'running' CHECK (desired_status IN ('running','stopped')),
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (deployment_id, region)
);
CREATE INDEX deployment_topology_region_idx ON deployment_topology (region);

CREATE TABLE sentinels (
  id                   text PRIMARY KEY,
  workspace_id         text NOT NULL REFERENCES workspaces(id),
  project_id           text NOT NULL REFERENCES projects(id),
  app_id               text NOT NULL REFERENCES apps(id),
  environment_id       text NOT NULL REFERENCES environments(id),
  region               text NOT NULL CHECK (region ~ '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$'),
  -- desired
  image                text NOT NULL CHECK (image <> ''),
  replicas             integer NOT NULL CHECK (replicas BETWEEN 0 AND 100),
  cpu_millicores       integer NOT NULL CHECK (cpu_millicores BETWEEN 1 AND 256000),
  memory_mib           integer NOT NULL CHECK (memory_mib BETWEEN 1 AND 1048576),
  desired_state        text NOT NULL DEFAULT 'running' CHECK (desired_state IN ('running','stopped')),
  -- observed, reported by krane
  available_replicas   integer NOT NULL DEFAULT 0 CHECK (available_replicas >= 0),
  updated_replicas     integer NOT NULL DEFAULT 0 CHECK (updated_replicas >= 0),
  ready_replicas       integer NOT NULL DEFAULT 0 CHECK (ready_replicas >= 0),
  observed_generation  bigint NOT NULL DEFAULT 0,
  running_image        text,
  health               text NOT NULL DEFAULT 'unknown' CHECK (health IN ('unknown','healthy','unhealthy')),
  deploy_status        text NOT NULL DEFAULT 'idle' CHECK (deploy_status IN ('idle','progressing','ready','failed')),
  created_at           timestamptz NOT NULL DEFAULT now(),
  updated_at           timestamptz NOT NULL DEFAULT now(),
  UNIQUE (environment_id, region)
);
CREATE INDEX sentinels_region_idx ON sentinels (region);

CREATE TABLE cilium_network_policies (
  id              text PRIMARY KEY,
  workspace_id    text NOT NULL REFERENCES workspaces(id),
  project_id      text NOT NULL REFERENCES projects(id),
  app_id          text NOT NULL REFERENCES apps(id),
  environment_id  text NOT NULL REFERENCES environments(id),
  region          text NOT NULL CHECK (region ~ '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$'),
  desired_state   text NOT NULL DEFAULT 'running' CHECK (desired_state IN ('running','stopped')),
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  UNIQUE (environment_id, region)
);
CREATE INDEX cilium_network_policies_region_idx ON cilium_network_policies (region);

CREATE TABLE instances (
  deployment_id   text NOT NULL REFERENCES deployments(id) ON DELETE CASCADE,
  region          text NOT NULL,
  pod_name        text NOT NULL CHECK (pod_name <> ''),
  address         text,
  status          text NOT NULL CHECK (status IN ('pending','running','failed')),
  reason          text,
  cpu_millicores  integer NOT NULL DEFAULT 0 CHECK (cpu_millicores >= 0),
  memory_mib      integer NOT NULL DEFAULT 0 CHECK (memory_mib >= 0),
  updated_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (deployment_id, region, pod_name)
);

CREATE TABLE domains (
  hostname        text PRIMARY KEY CHECK (hostname ~ '^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$'),
  workspace_id    text NOT NULL REFERENCES workspaces(id),
  environment_id  text NOT NULL REFERENCES environments(id),
  deployment_id   text NOT NULL REFERENCES deployments(id),
  -- 'environment' domains follow promotions; 'deployment' domains are pinned to one deployment.
  kind            text NOT NULL DEFAULT 'environment' CHECK (kind IN ('environment','deployment')),
  created_at      timestamptz NOT NULL DEFAULT now(),
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX domains_deployment_idx ON domains (deployment_id);
CREATE INDEX domains_environment_idx ON domains (environment_id);

-- The outbox. Rows point at a resource, never carry state: readers load the current desired
-- state at send time, so duplicates and reordering are harmless. txid is the writing
-- transaction's id; readers only pass rows whose transaction is older than every running one
-- (pg_snapshot_xmin), which is what makes the feed gap-free (see src/store/changes.ts).
CREATE TABLE deployment_changes (
  id             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  resource_type  text NOT NULL CHECK (resource_type IN ('deployment_topology','sentinel','cilium_network_policy')),
  resource_id    text NOT NULL CHECK (resource_id <> ''),
  region         text NOT NULL CHECK (region <> ''),
  txid           xid8 NOT NULL DEFAULT pg_current_xact_id(),
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX deployment_changes_cursor_idx ON deployment_changes (txid, id);
CREATE INDEX deployment_changes_region_cursor_idx ON deployment_changes (region, txid, id);
CREATE INDEX deployment_changes_created_idx ON deployment_changes (created_at);

-- The scope used when a request names no environment (API.md: "environment default").
INSERT INTO workspaces (id, name) VALUES ('default', 'default');
INSERT INTO projects (id, workspace_id, name) VALUES ('default', 'default', 'default');
INSERT INTO apps (id, workspace_id, project_id, name) VALUES ('default', 'default', 'default', 'default');
INSERT INTO environments (id, workspace_id, project_id, app_id, slug) VALUES ('default', 'default', 'default', 'default', 'default');

-- Agent tokens bound to one region. Only a SHA-256 of the token is stored: tokens are long
-- random strings, so a fast hash is enough and lets the auth path look a token up by hash.
CREATE TABLE agent_tokens (
  id          text PRIMARY KEY,
  region      text NOT NULL CHECK (region ~ '^[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?$'),
  token_hash  text NOT NULL UNIQUE CHECK (token_hash ~ '^[0-9a-f]{64}$'),
  created_at  timestamptz NOT NULL DEFAULT now(),
  revoked_at  timestamptz
);

-- Singleton row of cluster-wide facts. feed_epoch is part of every change-feed cursor; a
-- restore from backup gets a new epoch (UPDATE … SET feed_epoch = …), so agents holding
-- cursors from the old timeline get 410 and resync instead of skipping changes.
CREATE TABLE system_state (
  id          boolean PRIMARY KEY DEFAULT true CHECK (id),
  feed_epoch  text NOT NULL
);
INSERT INTO system_state (feed_epoch) VALUES (substr(md5(random()::text || clock_timestamp()::text), 1, 12));

-- What seed 001 still promised (issue 25): versions per environment, quarantined images,
-- workspace feature flags, default regions per environment, autoscaling and the `creating`
-- instance status.
--
-- Versions: every deployment carries one, unique within its environment (the unique index is
-- the rule, so two concurrent creates of the same version cannot both win). Automatic ones
-- (`v<N>`) are numbered by a counter row per environment, incremented in the creating
-- transaction: its row lock serialises concurrent creates of one environment, so no two get
-- the same number. Existing deployments are numbered by creation order.
SET LOCAL lock_timeout = '5s';

ALTER TABLE deployments ADD COLUMN version text;
UPDATE deployments d SET version = 'v' || x.n
  FROM (SELECT id, row_number() OVER (PARTITION BY environment_id ORDER BY created_at, id) AS n FROM deployments) x
  WHERE x.id = d.id;
ALTER TABLE deployments ALTER COLUMN version SET NOT NULL;
ALTER TABLE deployments ADD CONSTRAINT deployments_version_check CHECK (version ~ '^[A-Za-z0-9._+-]{1,64}$');
CREATE UNIQUE INDEX deployments_environment_version_key ON deployments (environment_id, version);

CREATE TABLE environment_version_counters (
  environment_id  text PRIMARY KEY REFERENCES environments(id) ON DELETE CASCADE,
  last_number     bigint NOT NULL CHECK (last_number >= 0)
);
INSERT INTO environment_version_counters (environment_id, last_number)
  SELECT environment_id, count(*) FROM deployments GROUP BY environment_id;

-- Autoscaling instead of a fixed replica count: { minReplicas, maxReplicas, cpuUtilization }.
ALTER TABLE deployments ADD COLUMN autoscaling jsonb;

-- Images that failed in an environment. Keyed by digest when the image names one (a tag can be
-- moved to other content), else by the reference as written.
CREATE TABLE image_quarantine (
  environment_id  text NOT NULL REFERENCES environments(id) ON DELETE CASCADE,
  image           text NOT NULL CHECK (image <> ''),
  reason          text NOT NULL,
  deployment_id   text NOT NULL REFERENCES deployments(id) ON DELETE CASCADE,
  created_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (environment_id, image)
);

-- Feature flags per workspace; a NULL column means "ctrl's --default-features decides".
CREATE TABLE workspace_features (
  workspace_id  text PRIMARY KEY REFERENCES workspaces(id) ON DELETE CASCADE,
  multi_region  boolean,
  auto_scaling  boolean,
  blue_green    boolean,
  canary        boolean,
  updated_at    timestamptz NOT NULL DEFAULT now()
);

-- An environment's regions (where a deploy that names none goes). The tenancy migration adds
-- the same column; IF NOT EXISTS lets both apply in either order.
ALTER TABLE environments ADD COLUMN IF NOT EXISTS regions text[];

-- `creating`: the pod is scheduled but its container is not running yet (seed 001's states).
ALTER TABLE instances DROP CONSTRAINT instances_status_check;
ALTER TABLE instances ADD CONSTRAINT instances_status_check
  CHECK (status IN ('pending','creating','running','failed')) NOT VALID;

-- What krane last saw of an autoscaled deployment's HorizontalPodAutoscaler in each region
-- (observed state, like instances: written by status reports, never by the outbox).
CREATE TABLE topology_autoscalers (
  deployment_id     text NOT NULL REFERENCES deployments(id) ON DELETE CASCADE,
  region            text NOT NULL,
  min_replicas      integer NOT NULL CHECK (min_replicas >= 0),
  max_replicas      integer NOT NULL CHECK (max_replicas >= 0),
  current_replicas  integer CHECK (current_replicas >= 0),
  desired_replicas  integer CHECK (desired_replicas >= 0),
  cpu_utilization   integer CHECK (cpu_utilization >= 0),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (deployment_id, region)
);

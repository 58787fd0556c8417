-- One owner per hostname (issue 32). Every name an environment or a deployment can be reached on
-- is a row here, claimed by one environment: its given hostname or its generated
-- `<app>-<slug>.<apex>` (claimed when the environment is made), each deployment's
-- `<deployment id>.<apex>` (claimed when the deployment is made), and the apex itself (the
-- platform's, claimed by ctrl at start). The primary key is the uniqueness: a second claim of a
-- name is refused by the database, whoever tries and however the writes interleave.
--
-- Before this table only the `hostname` column of environments was unique, so a generated name
-- or a deployment's name could be given to another tenant's environment, and the domain write
-- (ON CONFLICT (hostname) DO UPDATE) then moved the name to that tenant's deployment. Domains now
-- reference their claim by (hostname, environment): a domain row can only ever belong to the
-- environment that owns its name, so no write can re-point a name across environments.
--
-- Backfill: every domain row (what routes today) claims its name for its environment; then the
-- given hostnames of live environments that no domain holds. Generated names of environments
-- that never had a domain are claimed at their first deploy (the domain write claims a name it
-- finds unclaimed); the API refuses the generated shapes to anyone else meanwhile.
SET LOCAL lock_timeout = '5s';

CREATE TABLE hostname_claims (
  hostname        text PRIMARY KEY CHECK (hostname ~ '^[a-z0-9]([a-z0-9.-]{0,251}[a-z0-9])?$'),
  kind            text NOT NULL CHECK (kind IN ('environment', 'deployment', 'platform')),
  workspace_id    text REFERENCES workspaces(id),
  environment_id  text REFERENCES environments(id),
  deployment_id   text REFERENCES deployments(id),
  created_at      timestamptz NOT NULL DEFAULT now(),
  -- The apex belongs to no environment; every other name to exactly one.
  CHECK ((kind = 'platform') = (environment_id IS NULL)),
  CHECK ((environment_id IS NULL) = (workspace_id IS NULL)),
  CHECK ((kind = 'deployment') = (deployment_id IS NOT NULL)),
  UNIQUE (hostname, environment_id)
);
CREATE INDEX hostname_claims_environment_idx ON hostname_claims (environment_id);

INSERT INTO hostname_claims (hostname, kind, workspace_id, environment_id, deployment_id)
  SELECT hostname, kind, workspace_id, environment_id, CASE WHEN kind = 'deployment' THEN deployment_id END FROM domains;
INSERT INTO hostname_claims (hostname, kind, workspace_id, environment_id)
  SELECT hostname, 'environment', workspace_id, id FROM environments WHERE hostname IS NOT NULL AND deleted_at IS NULL
  ON CONFLICT (hostname) DO NOTHING;

ALTER TABLE domains ADD CONSTRAINT domains_claim_fkey FOREIGN KEY (hostname, environment_id) REFERENCES hostname_claims (hostname, environment_id);
-- The claims are the one place hostnames are unique now.
DROP INDEX environments_live_hostname_idx;

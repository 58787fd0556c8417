-- Progressive delivery (issue 13): traffic is desired state.
--
-- environment_routes: one routing table per environment, the hostname and its weighted
-- backends. `regions` is where the table is applied (the regions of its backends); a region
-- that leaves the set gets a change row and, finding no row for itself, deletes its ConfigMap.
-- Weights are checked by the one store function that writes the table (src/store/routes.ts),
-- which also writes the outbox; the CHECKs here only keep hand edits from breaking the shape.
--
-- Locks: first, so the foreign key's lock on environments is bounded too; tables in the app's
-- order (deployments, then deployment_changes). The replaced CHECKs are added NOT VALID: a
-- validating ADD CONSTRAINT scans the whole table (the outbox can be large) under an
-- ACCESS EXCLUSIVE lock that stalls every feed read and write. Existing rows satisfied the
-- narrower checks they replace; new and updated rows are checked as usual.
SET LOCAL lock_timeout = '5s';

CREATE TABLE environment_routes (
  environment_id  text PRIMARY KEY REFERENCES environments(id) ON DELETE CASCADE,
  workspace_id    text NOT NULL,
  hostname        text NOT NULL CHECK (hostname <> ''),
  backends        jsonb NOT NULL DEFAULT '[]' CHECK (jsonb_typeof(backends) = 'array'),
  regions         text[] NOT NULL DEFAULT '{}',
  updated_at      timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX environment_routes_regions_idx ON environment_routes USING gin (regions);

-- The strategy a deployment was created with (rolling when absent) and the new end state of a
-- canary or blue-green that a failing gate or an operator rolled back.
ALTER TABLE deployments ADD COLUMN strategy jsonb;
-- An operator's promote or abort of a canary or blue-green in progress, which its workflow reads
-- at its next check (and is woken for): the request is durable before the API answers.
ALTER TABLE deployments ADD COLUMN traffic_command text;
ALTER TABLE deployments ADD CONSTRAINT deployments_traffic_command_check CHECK (traffic_command IN ('promote','abort')) NOT VALID;
ALTER TABLE deployments DROP CONSTRAINT deployments_status_check;
ALTER TABLE deployments ADD CONSTRAINT deployments_status_check
  CHECK (status IN ('pending','building','deploying','network','ready','failed','stopped','superseded','rolled_back')) NOT VALID;

ALTER TABLE deployment_changes DROP CONSTRAINT deployment_changes_resource_type_check;
ALTER TABLE deployment_changes ADD CONSTRAINT deployment_changes_resource_type_check
  CHECK (resource_type IN ('deployment_topology','sentinel','cilium_network_policy','environment_routes')) NOT VALID;

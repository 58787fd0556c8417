-- What krane reports beyond pods and sentinel counts.

-- The spec hash of the sentinel Deployment krane last saw fully rolled out (src/sync/wire/spec-hash.ts).
-- ctrl calls a sentinel converged only when it equals the hash of the desired fields, so READY
-- means the cluster runs exactly the desired spec. NULL: nothing seen yet for the current spec
-- (a new desired config resets it).
ALTER TABLE sentinels ADD COLUMN observed_spec_hash text;

-- Desired states the cluster refused for a reason retrying cannot fix (invalid, over quota, too
-- large, …), one row per resource and region: krane reports a failure and, later, that the
-- resource applied again, in order; the row is the latest failure that was not cleared since.
CREATE TABLE apply_failures (
  resource_type   text NOT NULL CHECK (resource_type IN ('deployment_topology','sentinel','cilium_network_policy','environment_routes')),
  resource_id     text NOT NULL,
  region          text NOT NULL,
  code            text NOT NULL CHECK (code ~ '^ERR_[A-Z_]+$'),
  reason          text NOT NULL,
  failed_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (resource_type, resource_id, region)
);

-- The GC brake of each region's krane after its latest GC pass: held while a pass that would
-- delete too much waits for an operator to confirm it on krane's host.
CREATE TABLE krane_gc_status (
  region          text PRIMARY KEY,
  held            boolean NOT NULL,
  would_delete    integer NOT NULL CHECK (would_delete >= 0),
  managed         integer NOT NULL CHECK (managed >= 0),
  max_fraction    double precision NOT NULL CHECK (max_fraction > 0 AND max_fraction <= 1),
  reported_at     timestamptz NOT NULL
);

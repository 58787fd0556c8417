-- The spec hash of the sentinel Deployment krane last saw fully rolled out (src/sync/wire/spec-hash.ts).
-- ctrl calls a sentinel converged only when it equals the hash of the desired fields, so READY
-- means the cluster runs exactly the desired spec. NULL: nothing seen yet for the current spec
-- (a new desired config resets it).
ALTER TABLE sentinels ADD COLUMN observed_spec_hash text;

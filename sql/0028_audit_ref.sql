-- Opaque audit row ids (issue 32, after the attack). A row's `id` is the table's bigserial, and
-- the gap between two of a tenant's own rows was the number of rows every tenant wrote meanwhile:
-- another tenant's activity, to the call, for any key with audit.read. Views and page cursors
-- now carry `ref`, a random UUID; `id` stays the table's order and the keyset cursor's position
-- inside ctrl.
--
-- The column is added without a default and filled apart, so adding it does not rewrite the
-- table under its exclusive lock; the backfill writes each old row once (the trail is bounded by
-- --audit-retention, 90 days), and rows inserted from now on get theirs from the default.
SET LOCAL lock_timeout = '5s';

ALTER TABLE audit_log ADD COLUMN ref uuid;
ALTER TABLE audit_log ALTER COLUMN ref SET DEFAULT gen_random_uuid();
UPDATE audit_log SET ref = gen_random_uuid() WHERE ref IS NULL;
ALTER TABLE audit_log ALTER COLUMN ref SET NOT NULL;
CREATE UNIQUE INDEX audit_log_ref_key ON audit_log (ref);

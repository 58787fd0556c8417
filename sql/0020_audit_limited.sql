-- Audit outcome `limited` (issue 32): a call refused by a rate limit (429) has a row of its own
-- kind, apart from `denied` (401/403), so an auditor tells a key that was throttled from one that
-- tried what it may not. The CHECK is swapped in one statement; existing rows already satisfy the
-- narrower one it replaces, so it is added NOT VALID (no scan of the whole trail under the lock).
SET LOCAL lock_timeout = '5s';

ALTER TABLE audit_log DROP CONSTRAINT audit_log_outcome_check,
  ADD CONSTRAINT audit_log_outcome_check CHECK (outcome IN ('ok','denied','invalid','failed','limited')) NOT VALID;

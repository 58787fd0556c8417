-- A key never outlives the key that made it (issue 32). Revoking a key revokes the keys it
-- created, and theirs (src/store/api-keys.ts walks created_by); a child's expiry is at most its
-- creator's (the API caps it at creation). This index serves that walk. Keys made before the
-- rule are brought under it here: a descendant of a revoked key is revoked (with the NOTIFY every
-- replica listens for, sent at commit), and a descendant's expiry is capped at its ancestors'.
-- created_by is 'admin' (or an operator's `cli:` name) for keys the admin token made: roots.
SET LOCAL lock_timeout = '5s';

CREATE INDEX api_keys_created_by_idx ON api_keys (created_by);

WITH RECURSIVE tree AS (
  SELECT id, revoked_at, expires_at FROM api_keys WHERE created_by NOT IN (SELECT id FROM api_keys)
  UNION ALL
  SELECT k.id, coalesce(k.revoked_at, t.revoked_at), least(k.expires_at, t.expires_at)
  FROM api_keys k JOIN tree t ON k.created_by = t.id
),
upd AS (
  UPDATE api_keys a SET revoked_at = tree.revoked_at, expires_at = tree.expires_at
  FROM tree
  WHERE a.id = tree.id AND (a.revoked_at IS DISTINCT FROM tree.revoked_at OR a.expires_at IS DISTINCT FROM tree.expires_at)
  RETURNING a.id, a.revoked_at
)
SELECT pg_notify('unkey_infra_key_revoked', id) FROM upd WHERE revoked_at IS NOT NULL;

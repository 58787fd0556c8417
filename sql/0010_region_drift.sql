-- What each region's leading krane reports about drift it healed (issue 24): objects put back
-- after changes made behind its back, counted since that krane started, with the last one.
-- Shape: { "repaired": n, "byKind": { kind: n }, "lastAt"?: iso, "lastObject"?: "Kind ns/name" }.
-- NULL until an agent that reports drift has sent a heartbeat.
ALTER TABLE region_liveness ADD COLUMN drift jsonb CHECK (drift IS NULL OR jsonb_typeof(drift) = 'object');

-- The deployment lifecycle (issue 23): every accepted stop or start of a deployment moves its
-- desired-state generation. A workflow that began under one generation (a deploy, a canary's or
-- blue-green's walk) compares it, under the row's lock, before it writes a desired state or an
-- end status of its own: a later stop or start the operator made meanwhile is never overwritten,
-- whatever the walk was doing (the last accepted command wins). Adding a column with a constant
-- default rewrites nothing (PostgreSQL 11+), so this is a catalog change under a short lock.
SET LOCAL lock_timeout = '5s';
ALTER TABLE deployments ADD COLUMN desired_generation bigint NOT NULL DEFAULT 0;

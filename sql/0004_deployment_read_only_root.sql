-- Per-deployment choice of a read-only root filesystem for its containers (SECURITY.md).
-- Existing deployments keep a writable root, which is what they ran with.
ALTER TABLE deployments ADD COLUMN read_only_root_filesystem boolean NOT NULL DEFAULT false;

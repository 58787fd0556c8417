-- Fleet rollouts keep one row per sentinel (issue 28): a 10,000-sentinel rollout used to carry
-- every id, outcome and previous image in the engine's K/V state of SentinelRolloutService, one
-- jsonb value rewritten whole at every save and sent whole by GET /v1/sentinel-rollouts/current.
-- Now the object's state holds counts, and this table holds each sentinel's wave, outcome and
-- the image a rollback returns it to, written in the same transactions as the rollout's journal
-- (the engine's runTx), so a replay neither loses nor doubles an outcome.
--
-- Only the current rollout's rows are kept: a new rollout deletes the previous one's (the API
-- shows the current rollout only; Slack and the audit of invocations keep the history).
CREATE TABLE sentinel_rollout_items (
  rollout_id      text NOT NULL,
  sentinel_id     text NOT NULL,
  wave            int NOT NULL CHECK (wave >= 0),
  status          text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'READY', 'FAILED', 'SKIPPED')),
  reason          text,
  previous_image  text NOT NULL,
  reverted        boolean NOT NULL DEFAULT false,
  updated_at      timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (rollout_id, sentinel_id)
);
-- A wave's next page of pending sentinels, and the per-wave counts the API shows.
CREATE INDEX sentinel_rollout_items_wave_idx ON sentinel_rollout_items (rollout_id, wave, status, sentinel_id);
-- The API's paged lists by outcome (succeeded, failed, skipped), in id order.
CREATE INDEX sentinel_rollout_items_status_idx ON sentinel_rollout_items (rollout_id, status, sentinel_id);

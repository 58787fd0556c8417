-- Idempotency keys of API calls that create something (issue 35): a client that lost the
-- answer of a POST (ctrl's database failed over during the commit, the connection broke)
-- sends it again with the same Idempotency-Key header and gets the first call's result instead
-- of a second deployment. The row is written in the same transaction as what the call created,
-- so a key is recorded exactly when its effect is. Keys are the caller's (principal), kept a day.
CREATE TABLE api_idempotency_keys (
  principal     text NOT NULL,
  key           text NOT NULL,
  route         text NOT NULL,
  request_hash  text NOT NULL,
  target_id     text NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (principal, key)
);
CREATE INDEX api_idempotency_keys_created_at ON api_idempotency_keys (created_at);

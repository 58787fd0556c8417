-- The evidence behind every analysis verdict (issue 27): one row per check (threshold) or per
-- region per check (compare), so GET /v1/deployments/:id can show why a canary passed or was
-- rolled back after the live event is gone. `detail` is the check as the API shows it (method,
-- p-value, shift and interval, both sides' sample counts and medians, the reason in words).
-- The first compare check of a deployment is also where its comparison window starts.
CREATE TABLE analysis_checks (
  id             bigserial PRIMARY KEY,
  deployment_id  text NOT NULL REFERENCES deployments(id) ON DELETE CASCADE,
  at             timestamptz NOT NULL DEFAULT now(),
  judge          text NOT NULL CHECK (judge IN ('threshold', 'compare')),
  region         text,
  verdict        text NOT NULL CHECK (verdict IN ('pass', 'fail', 'inconclusive')),
  detail         jsonb NOT NULL DEFAULT '{}' CHECK (jsonb_typeof(detail) = 'object')
);
CREATE INDEX analysis_checks_deployment_idx ON analysis_checks (deployment_id, id);

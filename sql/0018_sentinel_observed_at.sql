-- When krane observed the state a sentinel's row holds (krane's clock, ms since the epoch,
-- strictly increasing per krane). A report made earlier can reach ctrl later (a request held on
-- a slow link, or retried after its answer was lost, commits after the next report); without an
-- order it overwrote the newer state, krane had nothing new to report, and a sentinel deploy's
-- wait never saw the convergence (chaos seed 48). Null: a krane from before the stamp.
ALTER TABLE sentinels ADD COLUMN observed_at double precision;

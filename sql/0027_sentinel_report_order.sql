-- The order of krane's sentinel reports (issue 33, defect 10): { leaseEpoch, seq }, the Lease's
-- transitions when the reporting krane took the lead and that leader's own counter. Every
-- replica of a region agrees on them, unlike the wall clocks of different processes that
-- observed_at compared (a takeover by a replica whose clock was behind had its reports dropped
-- as older; observedAt 1e308 pinned a row for good). A report of an older epoch, or of the same
-- epoch and a lower seq, is ignored. Null: no ordered report yet (or only from kranes without
-- the fields, applied as they come). observed_at stays, for display only.
ALTER TABLE sentinels
  ADD COLUMN report_epoch integer CHECK (report_epoch >= 0),
  ADD COLUMN report_seq bigint CHECK (report_seq >= 0),
  ADD CONSTRAINT sentinels_report_order_whole CHECK ((report_epoch IS NULL) = (report_seq IS NULL));

-- The feed epoch follows the database's history (issue 35). Physical replication copies
-- system_state unchanged, so after a failover the promoted standby serves the old epoch; if the
-- failover lost transactions (asynchronous replication), it then hands out their transaction
-- ids again, and an agent's cursor from the lost history would skip real changes. So the epoch
-- is tied to the history it was issued in: the cluster's system identifier (another cluster,
-- e.g. a dump restored elsewhere) and the primary's timeline (a promoted standby, a
-- point-in-time restore). ctrl compares the two on every tail poll and issues a new epoch when
-- they differ (store/system.ts fenceFeed): every older cursor is then 410 and agents full-sync.
--
-- unkey_feed_history(): '<system identifier>/<timeline as 8 hex digits>' on a primary; on a
-- standby the timeline is not known from SQL, so it says 'standby' (never equal to a fence).
CREATE FUNCTION unkey_feed_history() RETURNS text LANGUAGE sql VOLATILE AS $$
  SELECT (SELECT system_identifier::text FROM pg_control_system()) || '/' ||
         CASE WHEN pg_is_in_recovery() THEN 'standby'
              ELSE substr(pg_walfile_name(pg_current_wal_lsn()), 1, 8) END
$$;

ALTER TABLE system_state ADD COLUMN feed_history text;
UPDATE system_state SET feed_history = unkey_feed_history();

-- A deployment inserted without a version gets its environment's next `v<N>` from the database
-- itself, not only from ctrl's insert (issue 25). 0012 made `version` NOT NULL and left the
-- numbering to the new ctrl; a writer that names no version (an older ctrl replica during a
-- rolling upgrade, an operator's SQL, a tool) then failed its insert outright. The counter row
-- is bumped in the inserting transaction, so its lock orders concurrent creates of one
-- environment, and a number a named version already holds is skipped.
CREATE FUNCTION deployments_assign_version() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
  n bigint;
BEGIN
  IF NEW.version IS NULL THEN
    LOOP
      INSERT INTO environment_version_counters (environment_id, last_number) VALUES (NEW.environment_id, 1)
      ON CONFLICT (environment_id) DO UPDATE SET last_number = environment_version_counters.last_number + 1
      RETURNING last_number INTO n;
      EXIT WHEN NOT EXISTS (SELECT 1 FROM deployments WHERE environment_id = NEW.environment_id AND version = 'v' || n);
    END LOOP;
    NEW.version := 'v' || n;
  END IF;
  RETURN NEW;
END $$;

CREATE TRIGGER deployments_version BEFORE INSERT ON deployments
  FOR EACH ROW EXECUTE FUNCTION deployments_assign_version();

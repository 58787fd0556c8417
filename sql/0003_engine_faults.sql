-- The engine under faults: several processes on one database, and cancellations that always
-- reach the handler.
--
-- * Claims prefer the process that parked an invocation for its timers too (not only for
--   wake-ups), and when another process takes an invocation over, the previous holder is told
--   (`s:<id>:<holder>:<new epoch>`) so it drops the execution it keeps in memory.
-- * A suspended invocation records the positions it waits on (`awaiting`). A cancellation is
--   delivered only where the handler is sure to see it: by failing the pending entries of an
--   invocation all of whose awaited entries are pending. Otherwise the request is kept
--   (`cancel_requested`) until the next such suspension. Before, a cancel that found any
--   pending entry (a timer that lost an orTimeout race, say) failed those and dropped the
--   request, so a handler not waiting on them never saw it.

ALTER TABLE engine_invocations ADD COLUMN awaiting integer[];

-- Parks an invocation that waits only on completions, or refuses (returning what completed)
-- when one of the awaited entries is already done. A pending cancellation is delivered here
-- when nothing the handler waits on has completed otherwise: every pending entry fails with it
-- (the calls among them are returned, to be cancelled), and the request is cleared.
CREATE OR REPLACE FUNCTION engine_suspend(p_id text, p_epoch integer, p_awaited integer[], p_awakeables integer[], p_cancel_failure jsonb)
RETURNS jsonb LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_inv engine_invocations;
  v_done jsonb;
  v_due timestamptz;
  v_children jsonb;
BEGIN
  SELECT * INTO v_inv FROM engine_invocations WHERE id = p_id AND lease_epoch = p_epoch AND status = 'running' FOR NO KEY UPDATE;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('ok', false);
  END IF;
  INSERT INTO engine_journal (invocation_id, seq, kind, name, status)
    SELECT p_id, s, 'awakeable', 'awakeable', 'pending' FROM unnest(p_awakeables) AS s
    ON CONFLICT (invocation_id, seq) DO NOTHING;
  UPDATE engine_journal SET status = 'done', value = '{}', completed_at = now()
    WHERE invocation_id = p_id AND kind = 'sleep' AND status = 'pending' AND wake_at <= now();
  IF v_inv.cancel_requested AND NOT EXISTS (
       SELECT 1 FROM engine_journal WHERE invocation_id = p_id AND seq = ANY(p_awaited)
          AND status = 'done' AND failure IS DISTINCT FROM p_cancel_failure) THEN
    SELECT jsonb_agg(child_id) INTO v_children FROM engine_journal
      WHERE invocation_id = p_id AND status = 'pending' AND kind = 'call' AND child_id IS NOT NULL;
    UPDATE engine_journal SET status = 'done', failure = p_cancel_failure, completed_at = now()
      WHERE invocation_id = p_id AND status = 'pending';
    UPDATE engine_invocations SET cancel_requested = false, updated_at = now() WHERE id = p_id;
    SELECT jsonb_agg(jsonb_build_object('seq', seq, 'value', value, 'failure', failure)) INTO v_done
      FROM engine_journal WHERE invocation_id = p_id AND seq = ANY(p_awaited);
    RETURN jsonb_build_object('ok', true, 'suspended', false, 'done', v_done, 'cancelChildren', v_children);
  END IF;
  SELECT jsonb_agg(jsonb_build_object('seq', seq, 'value', value, 'failure', failure)) INTO v_done
    FROM engine_journal WHERE invocation_id = p_id AND seq = ANY(p_awaited) AND status = 'done';
  IF v_done IS NOT NULL THEN
    RETURN jsonb_build_object('ok', true, 'suspended', false, 'done', v_done);
  END IF;
  SELECT min(wake_at) INTO v_due FROM engine_journal WHERE invocation_id = p_id AND kind = 'sleep' AND status = 'pending';
  UPDATE engine_invocations
    SET status = 'suspended', parked_by = lease_owner, lease_owner = NULL, due_at = v_due, awaiting = p_awaited, updated_at = now()
    WHERE id = p_id;
  RETURN jsonb_build_object('ok', true, 'suspended', true, 'dueAt', extract(epoch FROM v_due) * 1000);
END $$;

-- Claims due invocations of the services a worker knows (p_services). Delayed exclusive sends
-- join their key's queue now, and only run if they get the key. Suspended and ready rows that
-- another live worker parked are left to it for p_steal_after_ms (it resumes them from memory);
-- after that anyone may take them, and the previous holder is told to drop its copy.
CREATE OR REPLACE FUNCTION engine_claim(p_worker text, p_limit integer, p_lease_ms integer, p_only text, p_steal_after_ms integer,
                                        p_services text[])
RETURNS SETOF engine_invocations LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v engine_invocations;
  v_seq bigint;
  v_holder boolean;
  v_previous text;
BEGIN
  FOR v IN
    SELECT * FROM engine_invocations
      WHERE due_at <= now() AND (p_only IS NULL OR id = p_only) AND service = ANY(p_services)
        AND (status NOT IN ('ready', 'suspended') OR parked_by IS NULL OR parked_by = p_worker
             OR due_at <= now() - make_interval(secs => p_steal_after_ms / 1000.0))
      ORDER BY due_at LIMIT p_limit FOR UPDATE SKIP LOCKED
  LOOP
    IF v.status = 'scheduled' AND v.kind = 'exclusive' THEN
      SELECT o_seq, o_holder INTO v_seq, v_holder FROM engine_enqueue(v.service, v.object_key, v.id);
      IF NOT v_holder THEN
        UPDATE engine_invocations SET status = 'queued', key_seq = v_seq, due_at = NULL, updated_at = now() WHERE id = v.id;
        CONTINUE;
      END IF;
      UPDATE engine_invocations SET key_seq = v_seq WHERE id = v.id;
    END IF;
    IF v.status = 'suspended' THEN
      UPDATE engine_journal SET status = 'done', value = '{}', completed_at = now()
        WHERE invocation_id = v.id AND kind = 'sleep' AND status = 'pending' AND wake_at <= now();
    END IF;
    -- A lapsed lease's owner, or the parker of a suspended or woken row, keeps an execution in
    -- memory that is stale from now on.
    v_previous := CASE WHEN v.status = 'running' THEN v.lease_owner ELSE v.parked_by END;
    UPDATE engine_invocations
      SET status = 'running', lease_owner = p_worker, lease_epoch = lease_epoch + 1,
          due_at = now() + make_interval(secs => p_lease_ms / 1000.0), attempts = attempts + 1, updated_at = now()
      WHERE id = v.id RETURNING * INTO v;
    IF v_previous IS NOT NULL AND v_previous <> p_worker THEN
      PERFORM pg_notify('unkey_engine', 's:' || v.id || ':' || v_previous || ':' || v.lease_epoch);
    END IF;
    RETURN NEXT v;
  END LOOP;
END $$;

-- Requests cancellation. Invocations that never started end as cancelled at once. Calls the
-- invocation waits on are cancelled first (children before the parent row: a finishing child
-- locks itself, then its parent, and so must we). Then, if it is suspended (or just woken) and
-- everything it waits on is pending, or failed by a cancellation, its pending entries fail
-- with the cancellation now: the handler is sure to see it. Otherwise the request is kept and
-- delivered at its next suspension (engine_suspend). Either way a suspended invocation is
-- woken, so its handler runs its finally blocks.
CREATE OR REPLACE FUNCTION engine_cancel(p_id text, p_failure jsonb, p_worker text, p_lease_ms integer)
RETURNS jsonb LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_inv engine_invocations;
  v_child text;
  v_wake jsonb;
  v_epoch integer;
  v_done jsonb;
BEGIN
  SELECT * INTO v_inv FROM engine_invocations WHERE id = p_id;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('found', false);
  END IF;
  IF v_inv.status IN ('completed', 'failed', 'cancelled') THEN
    RETURN jsonb_build_object('found', true, 'status', v_inv.status);
  END IF;
  FOR v_child IN SELECT child_id FROM engine_journal WHERE invocation_id = p_id AND kind = 'call' AND status = 'pending' LOOP
    PERFORM engine_cancel(v_child, p_failure, NULL, p_lease_ms);
  END LOOP;
  SELECT * INTO v_inv FROM engine_invocations WHERE id = p_id FOR NO KEY UPDATE;
  IF v_inv.status IN ('completed', 'failed', 'cancelled') THEN
    RETURN jsonb_build_object('found', true, 'status', v_inv.status);
  END IF;
  IF v_inv.status IN ('queued', 'scheduled')
     OR (v_inv.status = 'ready' AND v_inv.kind <> 'exclusive'
         AND NOT EXISTS (SELECT 1 FROM engine_journal WHERE invocation_id = p_id)) THEN
    UPDATE engine_invocations
      SET status = 'cancelled', error = p_failure, due_at = NULL, completed_at = now(), updated_at = now()
      WHERE id = p_id;
    IF v_inv.parent_id IS NOT NULL THEN
      PERFORM engine_complete_entry(v_inv.parent_id, v_inv.parent_seq, 'call', NULL, p_failure, NULL, p_lease_ms);
    END IF;
    PERFORM pg_notify('unkey_engine', 'd:' || p_id);
    RETURN jsonb_build_object('found', true, 'status', 'cancelled');
  END IF;
  IF v_inv.status IN ('suspended', 'ready') AND cardinality(v_inv.awaiting) > 0
     AND NOT EXISTS (SELECT 1 FROM engine_journal WHERE invocation_id = p_id AND seq = ANY(v_inv.awaiting)
                       AND status = 'done' AND failure IS DISTINCT FROM p_failure) THEN
    UPDATE engine_journal SET status = 'done', failure = p_failure, completed_at = now()
      WHERE invocation_id = p_id AND status = 'pending';
    UPDATE engine_invocations SET cancel_requested = false, updated_at = now() WHERE id = p_id;
  ELSE
    UPDATE engine_invocations SET cancel_requested = true, updated_at = now() WHERE id = p_id;
  END IF;
  IF v_inv.status = 'suspended' THEN
    IF p_worker IS NOT NULL AND v_inv.parked_by = p_worker THEN
      UPDATE engine_invocations
        SET status = 'running', lease_owner = p_worker, lease_epoch = lease_epoch + 1,
            due_at = now() + make_interval(secs => p_lease_ms / 1000.0), updated_at = now()
        WHERE id = p_id RETURNING lease_epoch INTO v_epoch;
      SELECT jsonb_agg(jsonb_build_object('seq', seq, 'value', value, 'failure', failure)) INTO v_done
        FROM engine_journal WHERE invocation_id = p_id AND status = 'done' AND kind IN ('awakeable', 'sleep', 'call');
      v_wake := jsonb_build_object('claimedEpoch', v_epoch, 'done', v_done);
    ELSE
      UPDATE engine_invocations SET status = 'ready', due_at = now() WHERE id = p_id;
      PERFORM pg_notify('unkey_engine', 'r:' || p_id || ':' || coalesce(v_inv.parked_by, ''));
    END IF;
  END IF;
  RETURN jsonb_build_object('found', true, 'status', v_inv.status, 'wake', v_wake);
END $$;

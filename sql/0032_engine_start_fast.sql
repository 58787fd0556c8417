-- engine_start (0002) without a subtransaction on every start (issue 38: a lone invocation's
-- start cost about two one-row commits). Its INSERT sat in a BEGIN … EXCEPTION block, which
-- opens a subtransaction on entry whether or not anything can collide; only an idempotency key
-- can lose a race to a concurrent start (the key lock covers exclusive targets, and the id is
-- new each time), so the block is entered only with one. Without a key, an id collision now
-- raises unique_violation instead of answering a dedupe with no id. Otherwise unchanged.
CREATE OR REPLACE FUNCTION engine_start(p_id text, p_service text, p_handler text, p_key text, p_kind text, p_input jsonb,
                             p_idem text, p_delay_ms integer, p_worker text, p_lease_ms integer,
                             p_parent text, p_parent_epoch integer, p_parent_seq integer, p_parent_entry text, p_entry_name text)
RETURNS jsonb LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_existing engine_invocations;
  v_seq bigint;
  v_holder boolean := true;
  v_status text;
  v_due timestamptz;
  v_owner text;
  v_epoch integer := 0;
  v_id text := p_id;
  v_deduped boolean := false;
BEGIN
  IF p_parent IS NOT NULL THEN
    PERFORM 1 FROM engine_invocations WHERE id = p_parent AND lease_epoch = p_parent_epoch AND status = 'running' FOR KEY SHARE;
    IF NOT FOUND THEN
      RAISE EXCEPTION 'engine lease lost on %', p_parent USING ERRCODE = 'UE001';
    END IF;
  END IF;
  IF p_kind = 'exclusive' AND p_delay_ms IS NULL THEN
    -- Lock the key first: it serialises starts on this key with each other and with the
    -- completion that hands the key on, so arrival numbers match commit order.
    INSERT INTO engine_object_keys AS k (service, object_key, next_seq) VALUES (p_service, p_key, 0)
      ON CONFLICT (service, object_key) DO UPDATE SET next_seq = k.next_seq;
  END IF;
  IF p_idem IS NOT NULL THEN
    SELECT * INTO v_existing FROM engine_invocations
      WHERE service = p_service AND handler = p_handler AND coalesce(object_key, '') = coalesce(p_key, '') AND idempotency_key = p_idem;
    IF FOUND THEN
      v_id := v_existing.id;
      v_deduped := true;
    END IF;
  END IF;
  IF NOT v_deduped THEN
    IF p_delay_ms IS NOT NULL THEN
      v_status := 'scheduled';
      v_due := now() + make_interval(secs => p_delay_ms / 1000.0);
    ELSE
      IF p_kind = 'exclusive' THEN
        SELECT o_seq, o_holder INTO v_seq, v_holder FROM engine_enqueue(p_service, p_key, p_id);
      END IF;
      IF NOT v_holder THEN
        v_status := 'queued';
      ELSIF p_worker IS NOT NULL THEN
        v_status := 'running';
        v_owner := p_worker;
        v_epoch := 1;
        v_due := now() + make_interval(secs => p_lease_ms / 1000.0);
      ELSE
        v_status := 'ready';
        v_due := now();
      END IF;
    END IF;
    IF p_idem IS NULL THEN
      -- No idempotency key, nothing to lose a race to: no subtransaction (the block below
      -- opens one on entry, on every start). A colliding id is an error, not a dedupe.
      INSERT INTO engine_invocations (id, service, handler, object_key, kind, input, status, idempotency_key, key_seq,
                                      parent_id, parent_seq, due_at, lease_owner, lease_epoch, attempts)
        VALUES (p_id, p_service, p_handler, p_key, p_kind, p_input, v_status, p_idem, v_seq,
                CASE WHEN p_parent_entry = 'call' THEN p_parent END, CASE WHEN p_parent_entry = 'call' THEN p_parent_seq END,
                v_due, v_owner, v_epoch, CASE WHEN v_owner IS NULL THEN 0 ELSE 1 END);
    ELSE
      BEGIN
        INSERT INTO engine_invocations (id, service, handler, object_key, kind, input, status, idempotency_key, key_seq,
                                        parent_id, parent_seq, due_at, lease_owner, lease_epoch, attempts)
          VALUES (p_id, p_service, p_handler, p_key, p_kind, p_input, v_status, p_idem, v_seq,
                  CASE WHEN p_parent_entry = 'call' THEN p_parent END, CASE WHEN p_parent_entry = 'call' THEN p_parent_seq END,
                  v_due, v_owner, v_epoch, CASE WHEN v_owner IS NULL THEN 0 ELSE 1 END);
      EXCEPTION WHEN unique_violation THEN
        -- A concurrent start with the same idempotency key won (only possible for targets that
        -- take no key lock); the subtransaction undid our key bookkeeping, so return theirs.
        SELECT * INTO v_existing FROM engine_invocations
          WHERE service = p_service AND handler = p_handler AND coalesce(object_key, '') = coalesce(p_key, '') AND idempotency_key = p_idem;
        v_id := v_existing.id;
        v_deduped := true;
      END;
    END IF;
    IF NOT v_deduped AND (v_status = 'ready' OR v_status = 'scheduled') THEN
      PERFORM pg_notify('unkey_engine', CASE WHEN v_status = 'ready' THEN 'n' ELSE 't:' || (extract(epoch FROM v_due) * 1000)::bigint END);
    END IF;
  END IF;
  IF v_deduped THEN
    SELECT * INTO v_existing FROM engine_invocations WHERE id = v_id;
    v_status := v_existing.status;
  END IF;
  IF p_parent_entry = 'call' THEN
    IF v_deduped AND v_existing.status IN ('completed', 'failed', 'cancelled') THEN
      INSERT INTO engine_journal (invocation_id, seq, kind, name, status, value, failure, child_id, completed_at)
        VALUES (p_parent, p_parent_seq, 'call', p_entry_name, 'done', v_existing.result, v_existing.error, v_id, now());
    ELSE
      INSERT INTO engine_journal (invocation_id, seq, kind, name, status, child_id)
        VALUES (p_parent, p_parent_seq, 'call', p_entry_name, 'pending', v_id);
      IF v_deduped AND v_existing.parent_id IS NULL THEN
        -- Deliver the existing invocation's result to this caller too.
        UPDATE engine_invocations SET parent_id = p_parent, parent_seq = p_parent_seq WHERE id = v_id;
      ELSIF v_deduped AND v_existing.parent_id IS DISTINCT FROM p_parent THEN
        -- One result goes to one caller; waiting here would never end, so say so.
        RAISE EXCEPTION 'invocation % (idempotency key %) is already awaited by %', v_id, p_idem, v_existing.parent_id
          USING ERRCODE = 'UE002';
      END IF;
    END IF;
  ELSIF p_parent_entry = 'send' THEN
    INSERT INTO engine_journal (invocation_id, seq, kind, name, status, value, child_id, completed_at)
      VALUES (p_parent, p_parent_seq, 'send', p_entry_name, 'done', jsonb_build_object('v', v_id), v_id, now());
  END IF;
  IF v_deduped THEN
    RETURN jsonb_build_object('id', v_id, 'deduped', true, 'status', v_status,
                              'result', v_existing.result, 'error', v_existing.error);
  END IF;
  RETURN jsonb_build_object('id', v_id, 'deduped', false, 'status', v_status, 'epoch', v_epoch);
END $$;

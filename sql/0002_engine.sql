-- The durable execution engine's tables and its multi-statement operations.
--
-- Invocations are rows whose `due_at` says when a worker may claim them: `ready` rows are due
-- at once, `scheduled` (delayed sends) at their fire time, `suspended` rows at their earliest
-- timer (NULL: only a completion wakes them), `running` rows when their lease expires. One
-- partial index on due_at therefore serves every kind of claim.
--
-- The operations that touch several rows are plpgsql functions: each is one round trip, and
-- every statement inside sees a fresh snapshot (READ COMMITTED), which the lock protocol below
-- relies on:
--   * object key row before invocation rows (start, complete, enqueue), so no deadlocks;
--   * whoever completes a journal entry locks the invocation row first, and so does suspend:
--     a completion is either seen by the suspend, or sees the suspended status and wakes it;
--   * every journal write of an executor holds FOR KEY SHARE on its invocation row with the
--     lease epoch it was claimed with, and claims take FOR UPDATE SKIP LOCKED, so a new owner
--     can never claim while an old one is mid-write, and the old one's later writes fail.

CREATE TABLE engine_invocations (
  id                text PRIMARY KEY,
  service           text NOT NULL,
  handler           text NOT NULL,
  object_key        text,
  kind              text NOT NULL CHECK (kind IN ('service','exclusive','shared')),
  input             jsonb NOT NULL,
  status            text NOT NULL
                    CHECK (status IN ('scheduled','queued','ready','running','suspended','completed','failed','cancelled')),
  result            jsonb,
  error             jsonb,
  idempotency_key   text,
  key_seq           bigint,
  parent_id         text,
  parent_seq        integer,
  due_at            timestamptz,
  lease_owner       text,
  lease_epoch       integer NOT NULL DEFAULT 0,
  parked_by         text,
  cancel_requested  boolean NOT NULL DEFAULT false,
  attempts          integer NOT NULL DEFAULT 0,
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  completed_at      timestamptz
);
CREATE UNIQUE INDEX engine_invocations_idempotency_idx
  ON engine_invocations (service, handler, coalesce(object_key, ''), idempotency_key)
  WHERE idempotency_key IS NOT NULL;
CREATE INDEX engine_invocations_due_idx ON engine_invocations (due_at) WHERE due_at IS NOT NULL;
CREATE INDEX engine_invocations_queue_idx ON engine_invocations (service, object_key, key_seq) WHERE status = 'queued';
CREATE INDEX engine_invocations_status_idx ON engine_invocations (status, created_at DESC);
CREATE INDEX engine_invocations_target_idx ON engine_invocations (service, created_at DESC);
CREATE INDEX engine_invocations_finished_idx ON engine_invocations (completed_at) WHERE completed_at IS NOT NULL;

-- One row per (invocation, position). `pending` rows are awaited completions (awakeable,
-- sleep, call); `done` rows carry the replayed value ({"v": …}, {} for undefined) or failure.
CREATE TABLE engine_journal (
  invocation_id  text NOT NULL,
  seq            integer NOT NULL,
  kind           text NOT NULL,
  name           text NOT NULL,
  status         text NOT NULL CHECK (status IN ('pending','done')),
  value          jsonb,
  failure        jsonb,
  wake_at        timestamptz,
  child_id       text,
  created_at     timestamptz NOT NULL DEFAULT now(),
  completed_at   timestamptz,
  PRIMARY KEY (invocation_id, seq)
);

-- Per object key: arrival counter (orders exclusive invocations) and the exclusive holder.
CREATE TABLE engine_object_keys (
  service     text NOT NULL,
  object_key  text NOT NULL,
  next_seq    bigint NOT NULL DEFAULT 0,
  holder      text,
  PRIMARY KEY (service, object_key)
);

-- Virtual object K/V state.
CREATE TABLE engine_state (
  service     text NOT NULL,
  object_key  text NOT NULL,
  name        text NOT NULL,
  value       jsonb NOT NULL,
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (service, object_key, name)
);

-- Takes an exclusive invocation into its key's queue: arrival number, and the key if free.
-- Returns true when the invocation now holds the key. Caller holds no invocation locks that a
-- completer of this key could want, except the row being enqueued, which is not yet queued.
CREATE FUNCTION engine_enqueue(p_service text, p_key text, p_id text, OUT o_seq bigint, OUT o_holder boolean)
LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_holder text;
BEGIN
  INSERT INTO engine_object_keys AS k (service, object_key, next_seq) VALUES (p_service, p_key, 1)
    ON CONFLICT (service, object_key) DO UPDATE SET next_seq = k.next_seq + 1
    RETURNING k.next_seq, k.holder INTO o_seq, v_holder;
  IF v_holder IS NULL THEN
    UPDATE engine_object_keys SET holder = p_id WHERE service = p_service AND object_key = p_key;
    o_holder := true;
  ELSE
    o_holder := v_holder = p_id;
  END IF;
END $$;

-- Hands the key to the next queued exclusive invocation (arrival order). Caller holds the key
-- row lock. Claims it for p_worker when given, else marks it ready and notifies.
CREATE FUNCTION engine_promote(p_service text, p_key text, p_worker text, p_lease_ms integer)
RETURNS jsonb LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_next text;
  v_row engine_invocations;
BEGIN
  SELECT id INTO v_next FROM engine_invocations
    WHERE service = p_service AND object_key = p_key AND status = 'queued'
    ORDER BY key_seq LIMIT 1 FOR NO KEY UPDATE;
  UPDATE engine_object_keys SET holder = v_next WHERE service = p_service AND object_key = p_key;
  IF v_next IS NULL THEN
    RETURN NULL;
  END IF;
  IF p_worker IS NOT NULL THEN
    UPDATE engine_invocations
      SET status = 'running', lease_owner = p_worker, lease_epoch = lease_epoch + 1,
          due_at = now() + make_interval(secs => p_lease_ms / 1000.0), attempts = attempts + 1, updated_at = now()
      WHERE id = v_next RETURNING * INTO v_row;
    -- The row itself, so the caller starts it without reading it back (it has no journal yet).
    RETURN jsonb_build_object('id', v_next, 'epoch', v_row.lease_epoch, 'service', v_row.service, 'handler', v_row.handler,
                              'key', v_row.object_key, 'kind', v_row.kind, 'input', v_row.input,
                              'cancelRequested', v_row.cancel_requested);
  END IF;
  UPDATE engine_invocations SET status = 'ready', due_at = now(), updated_at = now() WHERE id = v_next;
  PERFORM pg_notify('unkey_engine', 'n');
  RETURN jsonb_build_object('id', v_next);
END $$;

-- Completes a pending journal entry of an invocation (awakeable resolution, a call's result,
-- cancellation) and wakes the invocation if suspended: claimed for p_worker when that worker
-- parked it (it resumes in memory), else made ready and announced. Awakeable entries may not
-- exist yet (resolved before the waiter suspended): they are inserted done.
CREATE FUNCTION engine_complete_entry(p_inv text, p_seq integer, p_kind text, p_value jsonb, p_failure jsonb,
                                      p_worker text, p_lease_ms integer)
RETURNS jsonb LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_inv engine_invocations;
  v_n integer;
  v_epoch integer;
  v_done jsonb;
BEGIN
  SELECT * INTO v_inv FROM engine_invocations WHERE id = p_inv FOR NO KEY UPDATE;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('found', false, 'accepted', false);
  END IF;
  IF v_inv.status IN ('completed', 'failed', 'cancelled') THEN
    RETURN jsonb_build_object('found', true, 'accepted', false);
  END IF;
  INSERT INTO engine_journal AS j (invocation_id, seq, kind, name, status, value, failure, completed_at)
    VALUES (p_inv, p_seq, p_kind, p_kind, 'done', p_value, p_failure, now())
    ON CONFLICT (invocation_id, seq) DO UPDATE
      SET status = 'done', value = EXCLUDED.value, failure = EXCLUDED.failure, completed_at = now()
      WHERE j.status = 'pending' AND j.kind = EXCLUDED.kind;
  GET DIAGNOSTICS v_n = ROW_COUNT;
  IF v_n = 0 THEN
    RETURN jsonb_build_object('found', true, 'accepted', false);
  END IF;
  IF v_inv.status = 'suspended' THEN
    IF p_worker IS NOT NULL AND v_inv.parked_by = p_worker THEN
      UPDATE engine_invocations
        SET status = 'running', lease_owner = p_worker, lease_epoch = lease_epoch + 1,
            due_at = now() + make_interval(secs => p_lease_ms / 1000.0), updated_at = now()
        WHERE id = p_inv RETURNING lease_epoch INTO v_epoch;
      SELECT jsonb_agg(jsonb_build_object('seq', seq, 'value', value, 'failure', failure)) INTO v_done
        FROM engine_journal WHERE invocation_id = p_inv AND status = 'done' AND kind IN ('awakeable', 'sleep', 'call');
      RETURN jsonb_build_object('found', true, 'accepted', true, 'claimedEpoch', v_epoch, 'done', v_done);
    END IF;
    UPDATE engine_invocations SET status = 'ready', due_at = now(), updated_at = now() WHERE id = p_inv;
    PERFORM pg_notify('unkey_engine', 'r:' || p_inv || ':' || coalesce(v_inv.parked_by, ''));
  END IF;
  RETURN jsonb_build_object('found', true, 'accepted', true);
END $$;

-- Starts an invocation (client call/send, or ctx.call/send from a parent, which also records
-- the parent's journal entry under its lease). Idempotency keys return the existing one.
-- Claims it for p_worker when it is runnable now and a worker is given.
CREATE FUNCTION engine_start(p_id text, p_service text, p_handler text, p_key text, p_kind text, p_input jsonb,
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

-- Finishes an invocation under its lease: stores the outcome, delivers it to a calling parent,
-- hands an object key on, and announces it. Returns what the caller may run next in process.
CREATE FUNCTION engine_finish(p_id text, p_epoch integer, p_status text, p_result jsonb, p_error jsonb,
                              p_worker text, p_lease_ms integer)
RETURNS jsonb LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_inv engine_invocations;
  v_parent jsonb;
  v_next jsonb;
BEGIN
  SELECT * INTO v_inv FROM engine_invocations WHERE id = p_id;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('ok', false);
  END IF;
  IF v_inv.kind = 'exclusive' THEN
    PERFORM 1 FROM engine_object_keys WHERE service = v_inv.service AND object_key = v_inv.object_key FOR UPDATE;
  END IF;
  UPDATE engine_invocations
    SET status = p_status, result = p_result, error = p_error, due_at = NULL, lease_owner = NULL, parked_by = NULL,
        cancel_requested = false, completed_at = now(), updated_at = now()
    WHERE id = p_id AND lease_epoch = p_epoch AND status = 'running'
    RETURNING * INTO v_inv;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('ok', false);
  END IF;
  IF v_inv.parent_id IS NOT NULL THEN
    v_parent := engine_complete_entry(v_inv.parent_id, v_inv.parent_seq, 'call', p_result, p_error, p_worker, p_lease_ms)
                || jsonb_build_object('id', v_inv.parent_id);
  END IF;
  IF v_inv.kind = 'exclusive' THEN
    PERFORM 1 FROM engine_object_keys WHERE service = v_inv.service AND object_key = v_inv.object_key AND holder = p_id;
    IF FOUND THEN
      v_next := engine_promote(v_inv.service, v_inv.object_key, p_worker, p_lease_ms);
    END IF;
  END IF;
  PERFORM pg_notify('unkey_engine', 'd:' || p_id);
  RETURN jsonb_build_object('ok', true, 'parent', v_parent, 'next', v_next);
END $$;

-- Parks an invocation that waits only on completions. Refuses (and returns what completed)
-- when one of the awaited entries is already done, or when a cancellation is pending, which it
-- delivers by failing every pending entry.
CREATE FUNCTION engine_suspend(p_id text, p_epoch integer, p_awaited integer[], p_awakeables integer[], p_cancel_failure jsonb)
RETURNS jsonb LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_inv engine_invocations;
  v_done jsonb;
  v_due timestamptz;
BEGIN
  SELECT * INTO v_inv FROM engine_invocations WHERE id = p_id AND lease_epoch = p_epoch AND status = 'running' FOR NO KEY UPDATE;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('ok', false);
  END IF;
  INSERT INTO engine_journal (invocation_id, seq, kind, name, status)
    SELECT p_id, s, 'awakeable', 'awakeable', 'pending' FROM unnest(p_awakeables) AS s
    ON CONFLICT (invocation_id, seq) DO NOTHING;
  IF v_inv.cancel_requested THEN
    UPDATE engine_journal SET status = 'done', failure = p_cancel_failure, completed_at = now()
      WHERE invocation_id = p_id AND status = 'pending';
    UPDATE engine_invocations SET cancel_requested = false WHERE id = p_id;
  END IF;
  UPDATE engine_journal SET status = 'done', value = '{}', completed_at = now()
    WHERE invocation_id = p_id AND kind = 'sleep' AND status = 'pending' AND wake_at <= now();
  SELECT jsonb_agg(jsonb_build_object('seq', seq, 'value', value, 'failure', failure)) INTO v_done
    FROM engine_journal WHERE invocation_id = p_id AND seq = ANY(p_awaited) AND status = 'done';
  IF v_done IS NOT NULL THEN
    RETURN jsonb_build_object('ok', true, 'suspended', false, 'done', v_done);
  END IF;
  SELECT min(wake_at) INTO v_due FROM engine_journal WHERE invocation_id = p_id AND kind = 'sleep' AND status = 'pending';
  UPDATE engine_invocations
    SET status = 'suspended', parked_by = lease_owner, lease_owner = NULL, due_at = v_due, updated_at = now()
    WHERE id = p_id;
  RETURN jsonb_build_object('ok', true, 'suspended', true, 'dueAt', extract(epoch FROM v_due) * 1000);
END $$;

-- Claims due invocations of the services a worker knows (p_services). Delayed exclusive sends
-- join their key's queue now, and only run if they get the key. Ready rows that another live
-- worker parked are left to it for p_steal_after_ms (it resumes them from memory); after that
-- anyone may take them.
CREATE FUNCTION engine_claim(p_worker text, p_limit integer, p_lease_ms integer, p_only text, p_steal_after_ms integer,
                             p_services text[])
RETURNS SETOF engine_invocations LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v engine_invocations;
  v_seq bigint;
  v_holder boolean;
BEGIN
  FOR v IN
    SELECT * FROM engine_invocations
      WHERE due_at <= now() AND (p_only IS NULL OR id = p_only) AND service = ANY(p_services)
        AND (status <> 'ready' OR parked_by IS NULL OR parked_by = p_worker
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
    UPDATE engine_invocations
      SET status = 'running', lease_owner = p_worker, lease_epoch = lease_epoch + 1,
          due_at = now() + make_interval(secs => p_lease_ms / 1000.0), attempts = attempts + 1, updated_at = now()
      WHERE id = v.id RETURNING * INTO v;
    RETURN NEXT v;
  END LOOP;
END $$;

-- Requests cancellation. Invocations that never started end as cancelled at once; the others
-- get their pending entries failed with the cancellation (or, with none pending, at their next
-- suspension) and are woken so their handler sees it and runs its compensations. Calls it is
-- waiting on are cancelled too.
CREATE FUNCTION engine_cancel(p_id text, p_failure jsonb, p_worker text, p_lease_ms integer)
RETURNS jsonb LANGUAGE plpgsql AS $$
#variable_conflict use_column
DECLARE
  v_inv engine_invocations;
  v_pending integer;
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
  SELECT count(*) INTO v_pending FROM engine_journal WHERE invocation_id = p_id AND status = 'pending';
  -- Children first, before locking this row: a finishing child locks itself, then its parent,
  -- and so must we, or the two could deadlock.
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
  UPDATE engine_journal SET status = 'done', failure = p_failure, completed_at = now()
    WHERE invocation_id = p_id AND status = 'pending';
  -- Delivered now if anything was pending (children's cancellations count); otherwise at the
  -- next suspension. Never both: a compensation that waits must not be cancelled again.
  UPDATE engine_invocations SET cancel_requested = (v_pending = 0), updated_at = now() WHERE id = p_id;
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

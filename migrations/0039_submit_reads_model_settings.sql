-- A submit reads the owner's model settings itself (issue 39, leaner submits): the api sent one
-- query for the settings and then the submit, two round trips and two pool checkouts per
-- message. Now `submit_message` takes what the server offers and applies
-- `Offered::effective` in the same call: the stored choice while the offer still includes both
-- its chat and its memory combination, else the offer's default (`p_chat_model` and the three
-- after it, which the caller fills with the default choice). The offer is given as parallel
-- arrays of (model, effort) pairs, one pair per offered combination.
--
-- Its body is otherwise that of migration 0032 (see migration 0015 for how it works).

DROP FUNCTION submit_message;

CREATE FUNCTION submit_message(
    p_run uuid,
    p_session uuid,
    p_principal text,
    p_key text,
    p_operation text,
    p_request_hash text,
    p_attachments uuid[],
    p_max_steps integer,
    p_max_model_calls integer,
    p_max_tool_calls integer,
    p_max_cost_micros bigint,
    p_run_timeout_seconds integer,
    p_now timestamptz,
    p_chat_model text,
    p_chat_reasoning_effort text,
    p_memory_model text,
    p_memory_reasoning_effort text,
    p_chat_offer_models text[],
    p_chat_offer_efforts text[],
    p_memory_offer_models text[],
    p_memory_offer_efforts text[],
    p_kind text,
    p_payload jsonb,
    p_title text,
    p_status integer,
    p_body_head bytea,
    p_body_tail bytea,
    OUT o_outcome text,
    OUT o_run uuid,
    OUT o_artifact uuid,
    OUT o_seq bigint,
    OUT o_status integer,
    OUT o_body bytea
)
LANGUAGE plpgsql VOLATILE SECURITY INVOKER
SET search_path = public, pg_temp
AS $$
DECLARE
    prior record;
    chosen record;
    attached jsonb;
BEGIN
    -- The key's lock, in the lock space of the store's idempotency check: a concurrent request
    -- with the same key answers "in flight" instead of waiting.
    IF NOT pg_try_advisory_xact_lock(hashtextextended(p_principal || chr(31) || p_key, 7)) THEN
        o_outcome := 'key_in_flight';
        RETURN;
    END IF;
    SELECT k.operation, k.request_hash, k.response_status, k.response_body INTO prior
        FROM idempotency_keys k WHERE k.principal_id = p_principal AND k.key = p_key;
    IF FOUND THEN
        IF prior.operation <> p_operation OR prior.request_hash <> p_request_hash THEN
            o_outcome := 'key_reused';
        ELSE
            o_outcome := 'replay';
            o_status := prior.response_status;
            o_body := prior.response_body;
        END IF;
        RETURN;
    END IF;

    -- The session is the caller's, and cannot be deleted until this commits (the key-share lock
    -- a run's foreign key takes anyway, which no run ending conflicts with): nothing below can
    -- reveal another principal's session or fail on a concurrent delete.
    PERFORM 1 FROM sessions s WHERE s.id = p_session AND s.principal_id = p_principal FOR KEY SHARE;
    IF NOT FOUND THEN
        o_outcome := 'session_not_found';
        RETURN;
    END IF;

    -- Attachments: every one must be an artifact of this session (the first that is not is
    -- named, in the order sent); their stored details go into the event.
    IF cardinality(p_attachments) > 0 THEN
        SELECT w.id INTO o_artifact
            FROM unnest(p_attachments) WITH ORDINALITY AS w(id, n)
            WHERE NOT EXISTS (SELECT 1 FROM artifacts a WHERE a.id = w.id AND a.session_id = p_session)
            ORDER BY w.n LIMIT 1;
        IF o_artifact IS NOT NULL THEN
            o_outcome := 'unknown_artifact';
            RETURN;
        END IF;
        SELECT jsonb_agg(jsonb_build_object('artifact_id', a.id, 'filename', a.filename,
                                            'media_type', a.media_type, 'size_bytes', a.size_bytes)
                         ORDER BY w.n)
            INTO attached
            FROM unnest(p_attachments) WITH ORDINALITY AS w(id, n)
            JOIN artifacts a ON a.id = w.id AND a.session_id = p_session;
        p_payload := jsonb_set(p_payload, '{message,attachments}', attached);
    END IF;

    -- The model settings in force now, while the offer includes them (else the default given).
    SELECT m.chat_model, m.chat_reasoning_effort, m.memory_model, m.memory_reasoning_effort INTO chosen
        FROM model_settings m
        WHERE m.principal_id = p_principal
          AND (m.chat_model, m.chat_reasoning_effort)
              IN (SELECT * FROM unnest(p_chat_offer_models, p_chat_offer_efforts))
          AND (m.memory_model, m.memory_reasoning_effort)
              IN (SELECT * FROM unnest(p_memory_offer_models, p_memory_offer_efforts));
    IF FOUND THEN
        p_chat_model := chosen.chat_model;
        p_chat_reasoning_effort := chosen.chat_reasoning_effort;
        p_memory_model := chosen.memory_model;
        p_memory_reasoning_effort := chosen.memory_reasoning_effort;
    END IF;

    -- No session lock is taken before this insert: it may wait for a run being ended, and that
    -- transaction locks the session last (lock order: run, then session).
    LOOP
        INSERT INTO runs (id, session_id, state, principal_id, max_steps, max_model_calls,
                          max_tool_calls, max_cost_micros, run_timeout_seconds, deadline_at,
                          chat_model, chat_reasoning_effort, memory_model, memory_reasoning_effort,
                          working_since, created_at, updated_at)
            SELECT p_run, p_session, 'queued', p_principal, p_max_steps, p_max_model_calls,
                   p_max_tool_calls, p_max_cost_micros, p_run_timeout_seconds,
                   p_now + make_interval(secs => p_run_timeout_seconds),
                   p_chat_model, p_chat_reasoning_effort, p_memory_model, p_memory_reasoning_effort,
                   p_now, p_now, p_now
            ON CONFLICT (session_id) WHERE state IN ('queued', 'running', 'waiting_approval', 'waiting_input')
            DO NOTHING;
        EXIT WHEN FOUND;
        -- Lost to an active run (name it); a run that ended meanwhile lets the next attempt in.
        SELECT r.id INTO o_run FROM runs r
            WHERE r.session_id = p_session
              AND r.state IN ('queued', 'running', 'waiting_approval', 'waiting_input');
        IF FOUND THEN
            o_outcome := 'active_run';
            RETURN;
        END IF;
    END LOOP;

    -- The event: the session row lock, held to commit, keeps sequences contiguous and in
    -- commit order.
    UPDATE sessions SET last_event_seq = last_event_seq + 1, updated_at = now(),
                        title = coalesce(title, p_title)
        WHERE id = p_session RETURNING last_event_seq INTO STRICT o_seq;
    INSERT INTO events (session_id, seq, run_id, kind, payload)
        VALUES (p_session, o_seq, p_run, p_kind, p_payload);
    UPDATE runs SET message_seq = o_seq WHERE id = p_run;

    o_body := p_body_head || convert_to(o_seq::text, 'UTF8') || p_body_tail;
    INSERT INTO idempotency_keys (principal_id, key, operation, request_hash, response_status, response_body)
        VALUES (p_principal, p_key, p_operation, p_request_hash, p_status, o_body);
    o_outcome := 'accepted';
    o_run := p_run;
    o_status := p_status;
END
$$;

-- Runs become real: message submit with idempotency, per-run limits and outcomes, and the
-- per-session event log that the event stream replays.

-- The last event sequence handed out in each session. Incremented in the transaction that writes
-- the event, so sequences are contiguous per session and commit in order.
ALTER TABLE sessions ADD COLUMN last_event_seq bigint NOT NULL DEFAULT 0;

CREATE TABLE events (
    session_id uuid        NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    seq        bigint      NOT NULL CHECK (seq > 0),
    run_id     uuid        REFERENCES runs (id) ON DELETE CASCADE,
    kind       text        NOT NULL,
    payload    jsonb       NOT NULL CHECK (jsonb_typeof(payload) = 'object'),
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (session_id, seq)
);
CREATE INDEX events_by_run ON events (run_id, seq) WHERE run_id IS NOT NULL;

ALTER TABLE runs
    ADD COLUMN principal_id        text        NOT NULL DEFAULT 'owner',
    -- The event that started the run (its user message).
    ADD COLUMN message_seq         bigint,
    ADD COLUMN max_steps           integer     NOT NULL DEFAULT 16 CHECK (max_steps > 0),
    ADD COLUMN max_model_calls     integer     NOT NULL DEFAULT 16 CHECK (max_model_calls > 0),
    ADD COLUMN max_tool_calls      integer     NOT NULL DEFAULT 16 CHECK (max_tool_calls > 0),
    ADD COLUMN max_cost_micros     bigint      NOT NULL DEFAULT 1000000 CHECK (max_cost_micros >= 0),
    ADD COLUMN run_timeout_seconds integer     NOT NULL DEFAULT 300 CHECK (run_timeout_seconds > 0),
    ADD COLUMN deadline_at         timestamptz NOT NULL DEFAULT now() + interval '300 seconds',
    -- Why a terminal run ended: `requested` or `deadline` for cancelled runs, a code for failed.
    ADD COLUMN outcome_reason      text,
    ADD COLUMN finished_at         timestamptz,
    ADD CONSTRAINT terminal_runs_have_finished
        CHECK ((state IN ('completed', 'failed', 'cancelled')) = (finished_at IS NOT NULL));

-- Idempotency records of accepted requests: the exact response, replayed byte for byte to a
-- retry with the same key and request. Kept at least 24 hours.
CREATE TABLE idempotency_keys (
    principal_id  text        NOT NULL,
    key           text        NOT NULL,
    operation     text        NOT NULL,
    request_hash  text        NOT NULL,
    response_status integer   NOT NULL,
    response_body bytea       NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (principal_id, key)
);
CREATE INDEX idempotency_keys_by_age ON idempotency_keys (created_at);

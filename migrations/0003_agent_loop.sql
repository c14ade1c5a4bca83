-- The agent loop: worker leases and usage counters on runs, tool invocations (recorded as
-- dispatching before any side effect), approvals, questions, the notification outbox, and the
-- notes the built-in note tools read and write.

ALTER TABLE runs
    ADD COLUMN lease_owner      text,
    ADD COLUMN lease_expires_at timestamptz,
    ADD COLUMN attempts         integer NOT NULL DEFAULT 0,
    ADD COLUMN steps            integer NOT NULL DEFAULT 0,
    ADD COLUMN model_calls      integer NOT NULL DEFAULT 0,
    ADD COLUMN tool_calls       integer NOT NULL DEFAULT 0,
    ADD COLUMN cost_micros      bigint  NOT NULL DEFAULT 0,
    ADD COLUMN input_tokens     bigint  NOT NULL DEFAULT 0,
    ADD COLUMN output_tokens    bigint  NOT NULL DEFAULT 0;
-- Workers claim queued runs, and running runs whose lease expired.
CREATE INDEX runs_claimable ON runs (created_at) WHERE state IN ('queued', 'running');
CREATE INDEX runs_by_deadline ON runs (deadline_at)
    WHERE state IN ('queued', 'running', 'waiting_approval', 'waiting_input');

CREATE TABLE tool_invocations (
    id         uuid        PRIMARY KEY,
    run_id     uuid        NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    session_id uuid        NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    step       integer     NOT NULL,
    position   integer     NOT NULL,
    -- The model's identifier for the call, echoed back with its result.
    call_id    text        NOT NULL,
    tool       text        NOT NULL,
    arguments  jsonb       NOT NULL,
    state      text        NOT NULL CHECK (state IN ('queued', 'awaiting_approval', 'awaiting_answer', 'approved',
                   'denied', 'dispatching', 'succeeded', 'failed', 'outcome_unknown', 'cancelled')),
    result     jsonb,
    code       text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    UNIQUE (run_id, step, position)
);

CREATE TABLE approvals (
    id               uuid        PRIMARY KEY,
    run_id           uuid        NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    session_id       uuid        NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    invocation_id    uuid        NOT NULL UNIQUE REFERENCES tool_invocations (id) ON DELETE CASCADE,
    tool             text        NOT NULL,
    risk             text        NOT NULL CHECK (risk IN ('low', 'medium', 'high')),
    -- As displayed: strings over 512 characters truncated, proven by argument_digests.
    arguments        jsonb       NOT NULL,
    argument_digests jsonb       NOT NULL,
    status           text        NOT NULL CHECK (status IN ('PENDING', 'APPROVED', 'DENIED', 'CANCELLED', 'EXPIRED')),
    decided_at       timestamptz,
    created_at       timestamptz NOT NULL DEFAULT now(),
    CHECK ((status = 'PENDING') = (decided_at IS NULL))
);
CREATE INDEX approvals_pending_by_session ON approvals (session_id) WHERE status = 'PENDING';

CREATE TABLE questions (
    id            uuid        PRIMARY KEY,
    run_id        uuid        NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    session_id    uuid        NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    invocation_id uuid        NOT NULL UNIQUE REFERENCES tool_invocations (id) ON DELETE CASCADE,
    text          text        NOT NULL,
    answer        text,
    status        text        NOT NULL CHECK (status IN ('PENDING', 'ANSWERED', 'CANCELLED', 'EXPIRED')),
    answered_at   timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now()
);

-- Content-free notifications, written in the transaction that raises them; delivered by the
-- notify role (a later issue) no earlier than deliver_after.
CREATE TABLE notification_outbox (
    id            uuid        PRIMARY KEY,
    kind          text        NOT NULL CHECK (kind IN ('approval', 'question')),
    session_id    uuid        NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    run_id        uuid        REFERENCES runs (id) ON DELETE CASCADE,
    approval_id   uuid        REFERENCES approvals (id) ON DELETE CASCADE,
    question_id   uuid        REFERENCES questions (id) ON DELETE CASCADE,
    deliver_after timestamptz NOT NULL,
    obsolete_at   timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now()
);

-- The owner's notes, written by the `notes.add` tool. One note per invocation at most, so even
-- a repeated dispatch could not add a second copy.
CREATE TABLE notes (
    id            uuid        PRIMARY KEY,
    principal_id  text        NOT NULL,
    text          text        NOT NULL,
    invocation_id uuid        UNIQUE,
    created_at    timestamptz NOT NULL DEFAULT now()
);

-- Mail writes and sends of unknown outcome, waiting for a read-only reconciliation. A row holds
-- no message content: the account, the operation and the Message-ID the service generated for
-- the message (derived from the invocation), which is searched for in Drafts or Sent.

CREATE TABLE mail_reconciliations (
    invocation_id   uuid        PRIMARY KEY REFERENCES tool_invocations (id) ON DELETE CASCADE,
    session_id      uuid        NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    run_id          uuid        NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    account_id      text        NOT NULL,
    operation       text        NOT NULL CHECK (operation IN ('create_draft', 'send_message')),
    message_id      text        NOT NULL,
    -- pending until the message is found (found) or the attempts ran out (not_found, which
    -- proves nothing: the owner checks the mailbox; the service never repeats the action).
    state           text        NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'found', 'not_found')),
    attempts        integer     NOT NULL DEFAULT 0,
    thread_id       text,
    next_attempt_at timestamptz NOT NULL DEFAULT now(),
    created_at      timestamptz NOT NULL DEFAULT now(),
    settled_at      timestamptz
);

CREATE INDEX mail_reconciliations_due ON mail_reconciliations (next_attempt_at) WHERE state = 'pending';

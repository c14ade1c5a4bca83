-- Import history (issue 36): the owner asks the async worker to read the mail already synced in
-- a date range again into People (correspondents, what senders say of themselves, and beliefs
-- from the owner's own sent mail), at most a number of messages and within a spending cap on
-- the memory model. Each import is a durable operation in a session of its own (kind
-- `people_import`, outside the session index, deleted with it), claimed by one async worker at
-- a time with an expiring claim, and resumed from its cursor after a restart. One import per
-- principal is queued or running at a time.

ALTER TABLE sessions DROP CONSTRAINT sessions_kind_check;
ALTER TABLE sessions ADD CONSTRAINT sessions_kind_check CHECK (kind IN ('chat', 'email_send', 'people_import'));

CREATE TABLE people_imports (
    id                  uuid        PRIMARY KEY,
    principal_id        text        NOT NULL,
    session_id          uuid        NOT NULL UNIQUE REFERENCES sessions (id) ON DELETE CASCADE,
    -- The messages sent on these days (UTC), both included.
    since               date        NOT NULL,
    until               date        NOT NULL CHECK (until >= since),
    record_limit        integer     NOT NULL CHECK (record_limit BETWEEN 1 AND 10000),
    spending_cap_micros bigint      NOT NULL CHECK (spending_cap_micros >= 0),
    state               text        NOT NULL CHECK (state IN ('queued', 'running', 'completed', 'cancelled', 'failed')),
    -- Why it ended: `range_read`, `record_limit`, `spending_cap`, `cancelled`, or a failure's code.
    stop_reason         text,
    records_read        integer     NOT NULL DEFAULT 0,
    people_created      integer     NOT NULL DEFAULT 0,
    facts_noted         integer     NOT NULL DEFAULT 0,
    beliefs_formed      integer     NOT NULL DEFAULT 0,
    spent_micros        bigint      NOT NULL DEFAULT 0,
    -- The cursor: the last message read, in (sent_at, provider_message_id) order.
    after_sent_at       timestamptz,
    after_message_id    text,
    claimed_by          text,
    claimed_until       timestamptz,
    created_at          timestamptz NOT NULL,
    updated_at          timestamptz NOT NULL,
    finished_at         timestamptz,
    CHECK ((state IN ('completed', 'cancelled', 'failed')) = (finished_at IS NOT NULL)),
    CHECK ((finished_at IS NULL) OR (stop_reason IS NOT NULL))
);
CREATE UNIQUE INDEX people_imports_one_active ON people_imports (principal_id) WHERE state IN ('queued', 'running');
CREATE INDEX people_imports_listing ON people_imports (principal_id, created_at DESC);
CREATE INDEX people_imports_waiting ON people_imports (created_at) WHERE state IN ('queued', 'running');
-- The range's messages in reading order.
CREATE INDEX email_messages_by_sent ON email_messages (sent_at, provider_message_id);

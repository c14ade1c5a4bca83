-- Memory (issue 36): the governed beliefs the agent forms about the owner and their life, each
-- one short statement the owner can review, reject or delete. `normalized` is the statement's
-- comparison form (`domain::memory::normalize`): one belief per form per principal.
CREATE TABLE memories (
    id            uuid        PRIMARY KEY,
    principal_id  text        NOT NULL,
    -- The listing's order, newest first, and its cursor's position: it never changes.
    position      bigint      GENERATED ALWAYS AS IDENTITY UNIQUE,
    kind          text        NOT NULL
        CHECK (kind IN ('fact', 'preference', 'relationship', 'commitment', 'routine')),
    statement     text        NOT NULL CHECK (char_length(statement) BETWEEN 1 AND 300),
    normalized    text        NOT NULL CHECK (normalized <> ''),
    status        text        NOT NULL DEFAULT 'active' CHECK (status IN ('active', 'reviewed', 'not_true')),
    needs_review  boolean     NOT NULL,
    origin        text        NOT NULL CHECK (origin IN ('conversation', 'email')),
    formed_at     timestamptz NOT NULL,
    reviewed_at   timestamptz,
    -- Recall's full-text search over the statement (no stemming: statements are short and in
    -- any language).
    searchable    tsvector    GENERATED ALWAYS AS (to_tsvector('simple', statement)) STORED,
    UNIQUE (principal_id, normalized),
    -- A belief formed from mail is flagged until the owner reviews it (or rejects it).
    CHECK (origin <> 'email' OR status <> 'active' OR needs_review),
    CHECK ((status = 'active') = (reviewed_at IS NULL))
);
CREATE INDEX memories_listing ON memories (principal_id, position DESC);
CREATE INDEX memories_search ON memories USING gin (searchable);

-- What a belief was formed from: a conversation's run, or a message of a mail thread. Deleting
-- the belief removes these references, never the sources themselves.
CREATE TABLE memory_evidence (
    id                  bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    memory_id           uuid        NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    session_id          uuid        REFERENCES sessions (id) ON DELETE SET NULL,
    run_id              uuid        REFERENCES runs (id) ON DELETE SET NULL,
    email_thread        uuid        REFERENCES email_threads (id) ON DELETE SET NULL,
    provider_message_id text,
    noted_at            timestamptz NOT NULL
);
CREATE INDEX memory_evidence_of_memory ON memory_evidence (memory_id, id);

-- The normalized forms of statements the owner deleted: a statement equal or close to one of
-- them is never formed again. Only the form is kept, not the statement.
CREATE TABLE memory_tombstones (
    principal_id text        NOT NULL,
    normalized   text        NOT NULL CHECK (normalized <> ''),
    deleted_at   timestamptz NOT NULL,
    PRIMARY KEY (principal_id, normalized)
);

-- `Not relevant here`: a belief never recalled into the conversation it was marked in.
CREATE TABLE memory_exclusions (
    memory_id   uuid        NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    session_id  uuid        NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    excluded_at timestamptz NOT NULL,
    PRIMARY KEY (memory_id, session_id)
);

-- Which beliefs a run's prompt received, in rank order, so the owner can see what shaped an
-- answer.
CREATE TABLE recall_traces (
    run_id      uuid        NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    memory_id   uuid        NOT NULL REFERENCES memories (id) ON DELETE CASCADE,
    rank        smallint    NOT NULL CHECK (rank BETWEEN 1 AND 20),
    recalled_at timestamptz NOT NULL,
    PRIMARY KEY (run_id, memory_id),
    UNIQUE (run_id, rank)
);
CREATE INDEX recall_traces_of_memory ON recall_traces (memory_id);

-- Core schema: agent versions, folders, sessions (with commit-ordered index positions), runs
-- (one active per session), deleted-session tombstones, and artifacts stored in chunks.

-- Every agent configuration a session has ever been pinned to, kept so a pinned session always
-- runs with exactly the configuration it was created with.
CREATE TABLE agent_versions (
    agent_id            text        NOT NULL,
    version             text        NOT NULL,
    configuration       jsonb       NOT NULL,
    first_registered_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (agent_id, version)
);

CREATE TABLE folders (
    id           uuid        PRIMARY KEY,
    principal_id text        NOT NULL,
    name         text        NOT NULL CHECK (char_length(name) BETWEEN 1 AND 100),
    created_at   timestamptz NOT NULL DEFAULT now(),
    updated_at   timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX folders_unique_name ON folders (principal_id, lower(name));

-- Session index positions come from this single row, whose lock is held until the creating
-- transaction commits. Positions are therefore handed out in commit order: once a reader sees
-- position N, every session with a smaller position is already visible, so a keyset cursor never
-- skips a session that commits while a client pages.
CREATE TABLE session_index_clock (
    singleton boolean PRIMARY KEY DEFAULT true CHECK (singleton),
    position  bigint  NOT NULL
);
INSERT INTO session_index_clock (singleton, position) VALUES (true, 0);

CREATE TABLE sessions (
    id             uuid        PRIMARY KEY,
    principal_id   text        NOT NULL,
    index_position bigint      NOT NULL UNIQUE,
    agent_id       text        NOT NULL,
    agent_version  text        NOT NULL,
    title          text,
    metadata       jsonb       NOT NULL DEFAULT '{}'::jsonb CHECK (jsonb_typeof(metadata) = 'object'),
    folder_id      uuid        REFERENCES folders (id) ON DELETE SET NULL,
    -- Set for sessions a schedule started; the schedules table arrives with schedules.
    schedule_id    uuid,
    created_at     timestamptz NOT NULL DEFAULT now(),
    updated_at     timestamptz NOT NULL DEFAULT now(),
    FOREIGN KEY (agent_id, agent_version) REFERENCES agent_versions (agent_id, version),
    CONSTRAINT scheduled_sessions_are_never_filed CHECK (schedule_id IS NULL OR folder_id IS NULL)
);
CREATE INDEX sessions_index ON sessions (principal_id, index_position);
CREATE INDEX sessions_by_folder ON sessions (folder_id) WHERE folder_id IS NOT NULL;

-- A deleted session leaves only this: who deleted it, so a repeat delete by the same principal
-- succeeds while an id that never existed is still 404.
CREATE TABLE deleted_sessions (
    session_id   uuid        PRIMARY KEY,
    principal_id text        NOT NULL,
    deleted_at   timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE runs (
    id         uuid        PRIMARY KEY,
    session_id uuid        NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    state      text        NOT NULL CHECK (state IN (
        'queued', 'running', 'waiting_approval', 'waiting_input', 'completed', 'failed', 'cancelled')),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
);
-- One active run per session, enforced by the database rather than by code.
CREATE UNIQUE INDEX runs_one_active_per_session ON runs (session_id)
    WHERE state IN ('queued', 'running', 'waiting_approval', 'waiting_input');
CREATE INDEX runs_latest_per_session ON runs (session_id, created_at DESC, id DESC);

CREATE TABLE artifacts (
    id         uuid        PRIMARY KEY,
    session_id uuid        NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    filename   text        NOT NULL,
    media_type text        NOT NULL,
    size_bytes bigint      NOT NULL CHECK (size_bytes >= 0),
    sha256     text        NOT NULL CHECK (sha256 ~ '^[0-9a-f]{64}$'),
    created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX artifacts_by_session ON artifacts (session_id);

-- Artifact bytes, streamed in as they arrive. The reference is deferred so chunks can be written
-- before the artifact row, whose size and digest are known only at the end of the upload.
CREATE TABLE artifact_chunks (
    artifact_id uuid    NOT NULL REFERENCES artifacts (id) ON DELETE CASCADE DEFERRABLE INITIALLY DEFERRED,
    seq         integer NOT NULL CHECK (seq >= 0),
    bytes       bytea   NOT NULL,
    PRIMARY KEY (artifact_id, seq)
);
-- Uploads are mostly already-compressed media: store out of line without compression attempts.
ALTER TABLE artifact_chunks ALTER COLUMN bytes SET STORAGE EXTERNAL;

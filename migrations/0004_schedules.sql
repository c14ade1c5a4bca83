-- Schedules: runs started on a daily cadence, each pinned to an agent version, with the scopes
-- and limits its runs get. Occurrences record every firing (one per schedule and instant).

CREATE TABLE schedules (
    id                       uuid        PRIMARY KEY,
    principal_id             text        NOT NULL,
    revision                 integer     NOT NULL DEFAULT 1 CHECK (revision >= 1),
    title                    text        NOT NULL CHECK (char_length(title) BETWEEN 1 AND 200),
    instruction              text        NOT NULL,
    agent_id                 text        NOT NULL,
    agent_version            text        NOT NULL,
    policy_profile           text        NOT NULL CHECK (policy_profile = 'default'),
    requested_scopes         text[]      NOT NULL,
    max_steps                integer     NOT NULL CHECK (max_steps > 0),
    max_model_calls          integer     NOT NULL CHECK (max_model_calls > 0),
    max_tool_calls           integer     NOT NULL CHECK (max_tool_calls > 0),
    max_cost_micros          bigint      NOT NULL CHECK (max_cost_micros >= 0),
    run_timeout_seconds      integer     NOT NULL CHECK (run_timeout_seconds > 0),
    cadence_kind             text        NOT NULL CHECK (cadence_kind = 'DAILY'),
    local_time               text        NOT NULL CHECK (local_time ~ '^[0-2][0-9]:[0-5][0-9]:[0-5][0-9]$'),
    timezone                 text        NOT NULL,
    misfire_grace_seconds    integer     NOT NULL CHECK (misfire_grace_seconds >= 0),
    max_consecutive_failures integer     NOT NULL CHECK (max_consecutive_failures > 0),
    -- `stopped`: too many failed runs in a row.
    state                    text        NOT NULL CHECK (state IN ('active', 'cancelled', 'stopped')),
    consecutive_failures     integer     NOT NULL DEFAULT 0,
    -- The next instant the schedule fires, while active.
    next_fire_at             timestamptz,
    created_at               timestamptz NOT NULL DEFAULT now(),
    updated_at               timestamptz NOT NULL DEFAULT now(),
    cancelled_at             timestamptz,
    FOREIGN KEY (agent_id, agent_version) REFERENCES agent_versions (agent_id, version)
);
CREATE INDEX schedules_due ON schedules (next_fire_at) WHERE state = 'active';

CREATE TABLE schedule_occurrences (
    id                uuid        PRIMARY KEY,
    schedule_id       uuid        NOT NULL REFERENCES schedules (id) ON DELETE CASCADE,
    scheduled_for     timestamptz NOT NULL,
    schedule_revision integer     NOT NULL,
    state             text        NOT NULL CHECK (state IN ('started', 'skipped', 'completed', 'failed', 'cancelled')),
    -- Why a skipped or failed occurrence did not complete.
    reason            text,
    session_id        uuid        REFERENCES sessions (id) ON DELETE SET NULL,
    run_id            uuid        REFERENCES runs (id) ON DELETE SET NULL,
    created_at        timestamptz NOT NULL DEFAULT now(),
    updated_at        timestamptz NOT NULL DEFAULT now(),
    -- Exactly one occurrence per schedule and instant, whichever schedule process fires it.
    UNIQUE (schedule_id, scheduled_for)
);

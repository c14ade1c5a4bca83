-- The per-value rules of the hot tables become domains (issue 39, leaner submits).
--
-- PostgreSQL re-reads a table's CHECK constraints from their stored text at the start of every
-- statement that writes the table (`stringToNode` of each `conbin`, then expression set-up): a
-- submit writes `runs`, `sessions` and `events` in four statements and paid for 15 checks of
-- about 10 KB of node text each time, a fifth of its database CPU in `pg_strtok` and
-- `strtoll` (the profile in docs/benchmark.md). A domain's rule is parsed once per backend and
-- kept in its type cache, so the same rules cost little per statement. Every rule is kept;
-- only where it lives changes. The rules across columns (`terminal_runs_have_finished`,
-- `scheduled_sessions_are_never_filed`) stay table checks.
--
-- Clients see the base types (a row description names a domain's base type), so reads and
-- binds are unchanged. Changing a column to a domain over its own type rewrites nothing; the
-- rule is checked once against every existing row, and the column's indexes are rebuilt.

CREATE DOMAIN run_state AS text
    CHECK (VALUE IN ('queued', 'running', 'waiting_approval', 'waiting_input', 'completed', 'failed', 'cancelled'));
CREATE DOMAIN run_kind AS text CHECK (VALUE IN ('agent', 'draft_send'));
CREATE DOMAIN session_kind AS text CHECK (VALUE IN ('chat', 'email_send', 'people_import'));
CREATE DOMAIN positive_integer AS integer CHECK (VALUE > 0);
CREATE DOMAIN positive_bigint AS bigint CHECK (VALUE > 0);
CREATE DOMAIN nonnegative_bigint AS bigint CHECK (VALUE >= 0);
CREATE DOMAIN nonnegative_interval AS interval CHECK (VALUE >= interval '0');
CREATE DOMAIN json_object AS jsonb CHECK (jsonb_typeof(VALUE) = 'object');

ALTER TABLE runs
    DROP CONSTRAINT runs_state_check,
    DROP CONSTRAINT runs_kind_check,
    DROP CONSTRAINT runs_max_steps_check,
    DROP CONSTRAINT runs_max_model_calls_check,
    DROP CONSTRAINT runs_max_tool_calls_check,
    DROP CONSTRAINT runs_max_cost_micros_check,
    DROP CONSTRAINT runs_run_timeout_seconds_check,
    DROP CONSTRAINT runs_wait_timeout_seconds_check,
    DROP CONSTRAINT runs_worked_check,
    ALTER COLUMN state TYPE run_state,
    ALTER COLUMN kind TYPE run_kind,
    ALTER COLUMN max_steps TYPE positive_integer,
    ALTER COLUMN max_model_calls TYPE positive_integer,
    ALTER COLUMN max_tool_calls TYPE positive_integer,
    ALTER COLUMN max_cost_micros TYPE nonnegative_bigint,
    ALTER COLUMN run_timeout_seconds TYPE positive_integer,
    ALTER COLUMN wait_timeout_seconds TYPE positive_integer,
    ALTER COLUMN worked TYPE nonnegative_interval;

ALTER TABLE events
    DROP CONSTRAINT events_payload_check,
    DROP CONSTRAINT events_seq_check,
    ALTER COLUMN payload TYPE json_object,
    ALTER COLUMN seq TYPE positive_bigint;

ALTER TABLE sessions
    DROP CONSTRAINT sessions_kind_check,
    DROP CONSTRAINT sessions_metadata_check,
    ALTER COLUMN kind TYPE session_kind,
    ALTER COLUMN metadata TYPE json_object;

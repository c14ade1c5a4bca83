-- A run's timeout measures its working time: time parked on an approval or a question does not
-- count, and waiting for the owner has its own expiry (per agent, per schedule; a day by
-- default). `deadline_at` stays the instant the run is cancelled with reason `deadline` if
-- nothing changes: working, it is `working_since` + the timeout − `worked`; parked, it is when
-- the wait expires.
ALTER TABLE runs
    ADD COLUMN worked interval NOT NULL DEFAULT interval '0' CHECK (worked >= interval '0'),
    ADD COLUMN working_since timestamptz,
    -- A scheduled run's waiting expiry (its schedule's); an interactive run takes its agent's.
    ADD COLUMN wait_timeout_seconds integer CHECK (wait_timeout_seconds > 0);
UPDATE runs SET working_since = created_at WHERE state IN ('queued', 'running');
-- Runs parked before this release get the default day to be answered, and count the time from
-- their creation to their parking as worked.
UPDATE runs SET deadline_at = greatest(deadline_at, now() + interval '1 day'),
                worked = greatest(updated_at - created_at, interval '0')
    WHERE state IN ('waiting_approval', 'waiting_input');

ALTER TABLE schedules
    ADD COLUMN wait_timeout_seconds integer NOT NULL DEFAULT 86400 CHECK (wait_timeout_seconds > 0);

-- An occurrence keeps what its alert names: the title of the revision that ran and the
-- scheduled wall time in the schedule's zone.
ALTER TABLE schedule_occurrences
    ADD COLUMN title text,
    ADD COLUMN scheduled_local text;
UPDATE schedule_occurrences o
    SET title = s.title, scheduled_local = to_char(o.scheduled_for AT TIME ZONE s.timezone, 'YYYY-MM-DD HH24:MI')
    FROM schedules s WHERE s.id = o.schedule_id;

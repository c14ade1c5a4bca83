-- A schedule's occurrence is written once (issue 39, schedules on the second): the scheduler
-- chooses the session and run ids of a starting occurrence before creating them, inserts the
-- occurrence naming them, then creates them in the same transaction. The two foreign keys may
-- therefore be checked at commit, when the scheduler asks (`SET CONSTRAINTS … DEFERRED`); every
-- other statement still has them checked at once. Before, each firing inserted the occurrence,
-- then updated it with its session and run: 500 more row versions, index entries and
-- foreign-key checks per batch.
ALTER TABLE schedule_occurrences
    ALTER CONSTRAINT schedule_occurrences_session_id_fkey DEFERRABLE INITIALLY IMMEDIATE,
    ALTER CONSTRAINT schedule_occurrences_run_id_fkey DEFERRABLE INITIALLY IMMEDIATE;

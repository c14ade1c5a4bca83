-- Steward's table privileges and row security, for the logins of policies/logins.sql. Applied
-- by `steward-migrate` as the migration owner after the migrations, in one transaction, every
-- time: everything is revoked and granted again, so the database always holds exactly what this
-- file says (the expected matrix is policies/privileges.md, and a test compares the two).
--
-- By hand: psql -v ON_ERROR_STOP=1 -1 -f policies/grants.sql, as the migration owner; set
-- PGOPTIONS='-c steward.call_notifications=on' when AGENT_CALL_NOTIFICATIONS_ENABLED=1.
--
-- The spec's `alembic_version` is this project's `_sqlx_migrations`. No login needs a sequence
-- (ids are made by the client or by gen_random_uuid()).

-- Nobody but the owner creates anything in the schema, or temporary tables in the database.
REVOKE ALL ON SCHEMA public FROM PUBLIC;
DO $db$ BEGIN
    EXECUTE format('REVOKE TEMPORARY ON DATABASE %I FROM PUBLIC', current_database());
END $db$;
GRANT USAGE ON SCHEMA public TO steward_api, steward_worker, steward_async_worker, steward_schedule,
    steward_notify, steward_maintenance, steward_call, steward_ingress;

REVOKE ALL ON ALL TABLES IN SCHEMA public FROM PUBLIC, steward_api, steward_worker,
    steward_async_worker, steward_schedule, steward_notify, steward_maintenance, steward_call,
    steward_ingress;
REVOKE ALL ON ALL SEQUENCES IN SCHEMA public FROM PUBLIC, steward_api, steward_worker,
    steward_async_worker, steward_schedule, steward_notify, steward_maintenance, steward_call,
    steward_ingress;
REVOKE ALL ON ALL FUNCTIONS IN SCHEMA public FROM PUBLIC, steward_api, steward_worker,
    steward_async_worker, steward_schedule, steward_notify, steward_maintenance, steward_call,
    steward_ingress;

-- api: serves /v1. Deleting a session cascades (as the owner) to its runs, events and the rest.
GRANT SELECT ON _sqlx_migrations TO steward_api;
GRANT SELECT, INSERT ON agent_versions, deleted_sessions, artifacts, artifact_chunks, events,
    idempotency_keys TO steward_api;
GRANT SELECT, INSERT, UPDATE, DELETE ON folders, sessions TO steward_api;
GRANT SELECT, DELETE ON folder_proposal_sessions, web_sessions TO steward_api;
GRANT INSERT ON web_sessions TO steward_api;
GRANT SELECT, UPDATE ON folder_proposals TO steward_api;
GRANT SELECT, UPDATE ON session_index_clock, questions, schedule_occurrences TO steward_api;
-- Deciding an approval writes its status; what it shows (tool, arguments, digests) is the
-- worker's alone.
GRANT SELECT, UPDATE (status, decided_at, approved_for, task_permission_id) ON approvals TO steward_api;
-- Review & Send puts the one `send_message` call of a frozen draft in its run, queued by the
-- column default (no state of its choosing); decisions, denials, answers and cancellations
-- settle a call's state and result. Its tool and arguments never change after it is recorded.
GRANT SELECT, INSERT (id, run_id, session_id, step, position, call_id, tool, arguments),
    UPDATE (state, result, code, updated_at) ON tool_invocations TO steward_api;
-- A draft's send status reads the reconciliation of an uncertain send.
GRANT SELECT ON mail_reconciliations TO steward_api;
GRANT SELECT, INSERT, UPDATE ON runs, notification_outbox, schedules, devices, model_settings
    TO steward_api;
-- The stream key: the worker seals streamed output under it, the api opens it; nobody else
-- may read it (migration 0023, store::sealed).
GRANT SELECT ON stream_keys TO steward_api, steward_worker;
-- A message submit in one round trip (migration 0015); it runs with the api login's rights.
GRANT EXECUTE ON FUNCTION submit_message TO steward_api;

-- worker: runs the agent loop; its `schedule.create` tool writes schedules, its
-- `folders.propose` tool proposes filing (only the owner, through the api, files).
GRANT SELECT ON agent_versions, folders TO steward_worker;
GRANT SELECT, INSERT ON folder_proposals, folder_proposal_sessions TO steward_worker;
GRANT SELECT, UPDATE ON sessions, runs, schedule_occurrences TO steward_worker;
GRANT SELECT, INSERT ON events, idempotency_keys, notes TO steward_worker;
GRANT SELECT, INSERT, UPDATE ON tool_invocations, approvals, questions, notification_outbox,
    schedules, mail_reconciliations TO steward_worker;

-- schedule: fires schedules into fresh sessions and records outcomes.
GRANT SELECT, UPDATE ON session_index_clock, schedules TO steward_schedule;
GRANT SELECT, INSERT, UPDATE ON sessions, runs, schedule_occurrences TO steward_schedule;
GRANT SELECT, INSERT ON events TO steward_schedule;
GRANT INSERT ON notification_outbox TO steward_schedule;

-- notify: delivers the outbox; reads what it needs to address and word an alert.
GRANT SELECT ON sessions, approvals, schedules, schedule_occurrences TO steward_notify;
GRANT SELECT, UPDATE ON notification_outbox, devices TO steward_notify;
GRANT SELECT, INSERT ON notification_deliveries TO steward_notify;

-- Email mode. api reads the projections, records operations (archive, spam, refresh
-- requests) and clears the server's own suspected-spam flag; the async worker keeps the
-- projections and runs refreshes; the worker runs the provider writes and records their labels.
GRANT SELECT ON email_accounts, email_messages TO steward_api;
GRANT SELECT, UPDATE ON email_threads TO steward_api;
GRANT SELECT, INSERT ON email_operations TO steward_api;
GRANT SELECT, INSERT, UPDATE ON email_accounts, email_threads, email_messages TO steward_async_worker;
GRANT SELECT, UPDATE ON email_operations TO steward_async_worker;
GRANT SELECT, INSERT ON email_charges TO steward_async_worker;
GRANT SELECT ON email_accounts TO steward_worker;
GRANT SELECT, UPDATE ON email_threads, email_messages, email_operations TO steward_worker;
-- Drafts are the owner's, saved through the api: a draft row's newest revision moves forward,
-- revisions are insert-only.
GRANT SELECT, INSERT, UPDATE ON email_drafts TO steward_api;
GRANT SELECT, INSERT ON email_draft_revisions TO steward_api;
-- Feedback and learning (migration 0020) are the owner's, kept through the api; the async worker
-- applies the rules in force to each new assessment.
GRANT SELECT, INSERT, UPDATE ON email_feedback, email_style_samples TO steward_api;
GRANT SELECT, UPDATE ON email_learning TO steward_api;
GRANT SELECT, INSERT, UPDATE, DELETE ON email_learning_exclusions TO steward_api;
GRANT SELECT ON email_feedback TO steward_async_worker;
-- The agent's proposed replies land as revisions of the owner's drafts, following the endorsed style.
GRANT SELECT, UPDATE ON email_drafts TO steward_async_worker;
GRANT SELECT, INSERT ON email_draft_revisions TO steward_async_worker;
GRANT SELECT ON email_style_samples TO steward_async_worker;
-- The subscription census (0024): the async worker keeps it from the projected mail; the api
-- records the owner's decisions; the worker settles unsubscribes.
GRANT SELECT, INSERT, UPDATE ON email_subscriptions TO steward_async_worker;
GRANT SELECT, UPDATE ON email_subscriptions TO steward_api, steward_worker;
-- An unsubscribe command (0025) is recorded by the api and run by the worker, which also
-- queues the archive of an unsubscribed sender's Inbox mail when the owner asked for it.
GRANT SELECT, INSERT ON email_unsubscribe_targets TO steward_api;
-- The worker also records the one command a Chat unsubscribe's approval allows.
GRANT SELECT, INSERT, UPDATE ON email_unsubscribe_targets TO steward_worker;
GRANT INSERT ON email_operations TO steward_worker;
-- The junk first pass (0026) is the async worker's alone: its judgments and journal are
-- insert-only; the pilot's daily allowance is counted up.
GRANT SELECT, INSERT ON email_junk_judgments, email_junk_events TO steward_async_worker;
GRANT SELECT, INSERT, UPDATE ON email_junk_pilot_days TO steward_async_worker;

-- maintenance (0034): expires what has outlived its use (store::retention), reading only the
-- columns that say so: it marks old artifacts and removes their bytes, deletes idempotency
-- records, accepted folder proposals, expired web sessions, settled notifications and settled
-- email operations, and clears the transcript and summary of calls ended 30 days ago. It reads
-- no content: no bytes, no response bodies, no transcripts, no mail.
GRANT SELECT (id, created_at, expired_at), UPDATE (expired_at) ON artifacts TO steward_maintenance;
GRANT SELECT (artifact_id), DELETE ON artifact_chunks TO steward_maintenance;
GRANT SELECT (principal_id, key, created_at), DELETE ON idempotency_keys TO steward_maintenance;
GRANT SELECT (id, status, resolved_at), DELETE ON folder_proposals TO steward_maintenance;
GRANT SELECT (id, expires_at), DELETE ON web_sessions TO steward_maintenance;
GRANT SELECT (id, acknowledged_at, obsolete_at, delivered_at, withdrawn_at), DELETE
    ON notification_outbox TO steward_maintenance;
GRANT SELECT (id, account_id, kind, state, reconciled_at, subscription, created_at, updated_at), DELETE
    ON email_operations TO steward_maintenance;
GRANT SELECT (id, principal_id, kind, finished_at, expired_at),
    UPDATE (transcript, summary, expired_at, updated_at) ON call_records TO steward_maintenance;

-- call: the spec's table, for the tables this schema has (see policies/privileges.md).
GRANT SELECT ON _sqlx_migrations, sessions TO steward_call;
GRANT SELECT, INSERT, UPDATE ON call_records TO steward_call;
GRANT SELECT, UPDATE ON events, tool_invocations, runs, artifacts TO steward_call;
DO $call_notifications$ BEGIN
    IF current_setting('steward.call_notifications', true) = 'on' THEN
        GRANT SELECT, INSERT ON notification_outbox TO steward_call;
    END IF;
END $call_notifications$;

-- Calls (0027): the api lists, reads, cancels and deletes the owner's calls; the worker
-- records the one outbound reservation an approved brief allows; the notify role reads only a
-- call's owner (to find the devices of a `call_finished` notification).
GRANT SELECT, UPDATE ON call_records TO steward_api;
GRANT SELECT, INSERT ON call_records TO steward_worker;
GRANT SELECT (id, principal_id, kind) ON call_records TO steward_notify;

-- Website Access (0028): the api keeps the owner's browser profiles and their ceremonies'
-- secret-free records.
GRANT SELECT, INSERT, UPDATE, DELETE ON browser_profiles, browser_ceremonies TO steward_api;
-- `browser.act` (0029): the api grants task permissions (an approval decided `allow_for_task`)
-- and stops them; the worker reads a conversation's profile and counts the actions a
-- permission covers, nothing else of it.
GRANT SELECT, INSERT, UPDATE (stopped_at) ON browser_task_permissions TO steward_api;
GRANT SELECT ON browser_profiles TO steward_worker;
GRANT SELECT, UPDATE (actions_used) ON browser_task_permissions TO steward_worker;

-- Memory (0030): the worker forms beliefs from finished runs and recalls them into a run's
-- prompt, recording each recall; the async worker forms them from assessed mail; both read the
-- tombstones that forbid a deleted statement, and only the worker reads the exclusions. The api
-- lists them and their evidence and recalls, reviews and rejects them (their status alone),
-- and deletes them, leaving a tombstone.
GRANT SELECT, UPDATE (status, needs_review, reviewed_at), DELETE ON memories TO steward_api;
GRANT SELECT ON memory_evidence, recall_traces TO steward_api;
GRANT INSERT ON memory_tombstones TO steward_api;
GRANT SELECT, INSERT ON memory_exclusions TO steward_api;
GRANT SELECT, INSERT ON memories TO steward_worker, steward_async_worker;
GRANT INSERT ON memory_evidence TO steward_worker, steward_async_worker;
GRANT SELECT ON memory_tombstones TO steward_worker, steward_async_worker;
GRANT SELECT ON memory_exclusions TO steward_worker;
GRANT INSERT ON recall_traces TO steward_worker;

-- People (0031): the async worker gathers records from projected mail (marking each message
-- gathered) and never remakes a forgotten one; the api shows them with their timeline and
-- open threads, and keeps them for the owner: pins, reviews, renames, corrects facts, merges
-- (removing a fact both records hold), tells apart, repairs and forgets (leaving the contacts'
-- digests).
GRANT SELECT, INSERT, UPDATE, DELETE ON people TO steward_api;
GRANT SELECT, INSERT, UPDATE ON person_contacts TO steward_api;
GRANT SELECT, UPDATE, DELETE ON person_facts TO steward_api;
GRANT SELECT, INSERT ON person_distinctions TO steward_api;
GRANT INSERT ON people_forgotten TO steward_api;
GRANT SELECT, INSERT, UPDATE ON people, person_contacts TO steward_async_worker;
GRANT SELECT, INSERT ON person_facts TO steward_async_worker;
-- The worker keeps the people the owner names in a conversation (a record, its relationship and
-- the naming belief as its fact); it reads no contacts and forgets no one.
GRANT SELECT, INSERT, UPDATE ON people TO steward_worker;
GRANT SELECT, INSERT ON person_facts TO steward_worker;
GRANT SELECT ON people_forgotten TO steward_async_worker;
-- Import history (0033): the api starts (with its session), lists and cancels imports; the
-- async worker claims, reads, charges and finishes them.
GRANT SELECT, INSERT, UPDATE ON people_imports TO steward_api;
GRANT SELECT, UPDATE ON people_imports TO steward_async_worker;
-- The async worker reads the owner's memory model, which forms beliefs from their sent mail.
GRANT SELECT ON model_settings TO steward_async_worker;

-- ingress: receipts only, enforced by row security below.
GRANT SELECT ON _sqlx_migrations TO steward_ingress;
GRANT SELECT, INSERT, UPDATE ON call_records TO steward_ingress;

-- Row security on call records (enabled and forced by migration 0010): one tenant, the owner's
-- principal; the ingress login is further restricted to receipt rows for every command. A
-- restrictive policy grants nothing by itself, so ingress also gets the permissive tenant one.
DROP POLICY IF EXISTS call_records_tenant ON call_records;
CREATE POLICY call_records_tenant ON call_records AS PERMISSIVE FOR ALL
    TO steward_call, steward_ingress, steward_api, steward_worker, steward_notify, steward_maintenance
    USING (principal_id = 'owner') WITH CHECK (principal_id = 'owner');
-- The api, notify, worker and maintenance logins see calls, never receipts; the worker records
-- outbound calls only.
DROP POLICY IF EXISTS call_records_calls_only ON call_records;
CREATE POLICY call_records_calls_only ON call_records AS RESTRICTIVE FOR ALL
    TO steward_api, steward_notify, steward_worker, steward_maintenance
    USING (kind = 'call') WITH CHECK (kind = 'call');
-- The worker records only the reservation an approved brief makes: outbound, approved, with no
-- result of a call.
DROP POLICY IF EXISTS call_records_worker_outbound ON call_records;
CREATE POLICY call_records_worker_outbound ON call_records AS RESTRICTIVE FOR INSERT
    TO steward_worker
    WITH CHECK (direction = 'outbound' AND state = 'approved' AND provider_call_id IS NULL
                AND transcript IS NULL AND summary IS NULL AND deleted_at IS NULL);
-- The api cancels and deletes: it can never put a call back on the way to being dialled.
DROP POLICY IF EXISTS call_records_api_settles ON call_records;
CREATE POLICY call_records_api_settles ON call_records AS RESTRICTIVE FOR UPDATE
    TO steward_api
    USING (true) WITH CHECK (state IN ('finished', 'not_placed', 'cancelled'));
DROP POLICY IF EXISTS call_records_ingress_receipts ON call_records;
CREATE POLICY call_records_ingress_receipts ON call_records AS RESTRICTIVE FOR ALL
    TO steward_ingress
    USING (kind = 'receipt') WITH CHECK (kind = 'receipt');

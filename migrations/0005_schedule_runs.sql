-- Schedule firings: runs remember the occurrence that started them and the scopes they were
-- granted; schedule outcomes are notified through the outbox.

ALTER TABLE runs
    ADD COLUMN occurrence_id    uuid   REFERENCES schedule_occurrences (id) ON DELETE SET NULL,
    ADD COLUMN requested_scopes text[] NOT NULL DEFAULT '{}';

ALTER TABLE notification_outbox DROP CONSTRAINT notification_outbox_kind_check;
ALTER TABLE notification_outbox
    ADD CONSTRAINT notification_outbox_kind_check CHECK (kind IN ('approval', 'question', 'schedule_outcome')),
    ADD COLUMN occurrence_id uuid REFERENCES schedule_occurrences (id) ON DELETE CASCADE;

-- A skipped or unauthorized occurrence has no session, yet raises an outcome notification.
ALTER TABLE notification_outbox ALTER COLUMN session_id DROP NOT NULL;

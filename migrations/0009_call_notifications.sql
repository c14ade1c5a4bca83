-- Finished calls notify the owner too (delivered without delay); the calling feature writes
-- these rows with the call's id.

ALTER TABLE notification_outbox DROP CONSTRAINT notification_outbox_kind_check;
ALTER TABLE notification_outbox
    ADD CONSTRAINT notification_outbox_kind_check
        CHECK (kind IN ('approval', 'question', 'schedule_outcome', 'call_finished')),
    ADD COLUMN call_id uuid;

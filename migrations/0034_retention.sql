-- Retention (issue 37): the maintenance role removes what has outlived its use, in bounded
-- passes. An artifact's bytes are removed once it is older than the artifact retention
-- (`ARTIFACT_RETENTION_DAYS`); its metadata stays, marked `expired_at`, and its content route
-- answers 410 `artifact_expired` from then on.
ALTER TABLE artifacts ADD COLUMN expired_at timestamptz;
CREATE INDEX artifacts_unexpired ON artifacts (created_at) WHERE expired_at IS NULL;

-- The other passes' lookups: settled folder proposals, settled notifications and settled email
-- operations, oldest first.
CREATE INDEX folder_proposals_accepted ON folder_proposals (resolved_at) WHERE status = 'accepted';
CREATE INDEX notification_outbox_settled ON notification_outbox (LEAST(acknowledged_at, obsolete_at))
    WHERE acknowledged_at IS NOT NULL OR obsolete_at IS NOT NULL;
CREATE INDEX email_operations_settled ON email_operations (updated_at)
    WHERE state IN ('succeeded', 'failed') OR (state = 'uncertain' AND reconciled_at IS NOT NULL);

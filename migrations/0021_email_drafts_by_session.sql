-- A session's read names the draft it sends (`draft_id` of a send session): found by the
-- draft's send session, which only drafts that were frozen have.
CREATE INDEX email_drafts_by_session ON email_drafts (session_id) WHERE session_id IS NOT NULL;

-- Review & Send (issue 18): a draft's newest revision is frozen and sent through the mail tools'
-- own approval, dispatch and reconciliation. Each draft sends from a session of its own (kind
-- `email_send`, outside the session index and folders), whose runs hold one `send_message`
-- call with exactly the frozen revision and end when it settles, without asking a model.
ALTER TABLE sessions ADD COLUMN kind text NOT NULL DEFAULT 'chat' CHECK (kind IN ('chat', 'email_send'));
-- A `draft_send` run holds its one call from the start and asks no model.
ALTER TABLE runs ADD COLUMN kind text NOT NULL DEFAULT 'agent' CHECK (kind IN ('agent', 'draft_send'));

-- The draft's send session, and its newest freeze: the run that sends it and the revision it
-- froze. What became of the send is read from that run's invocation, approval and
-- reconciliation; a later save cancels a freeze nobody approved yet.
ALTER TABLE email_drafts
    ADD COLUMN session_id      uuid    REFERENCES sessions ON DELETE RESTRICT,
    ADD COLUMN send_run        uuid    REFERENCES runs ON DELETE RESTRICT,
    ADD COLUMN frozen_revision integer CHECK (frozen_revision >= 1),
    ADD CONSTRAINT email_drafts_frozen_together CHECK ((send_run IS NULL) = (frozen_revision IS NULL)),
    ADD CONSTRAINT email_drafts_send_in_session CHECK (send_run IS NULL OR session_id IS NOT NULL);

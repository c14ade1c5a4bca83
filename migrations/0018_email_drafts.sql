-- Email mode's versioned drafts (issue 18): owned by the server, never a mailbox write. A draft
-- replies in a thread of its account or starts a new message there; each save is a new
-- revision, numbered from 1, made only when the saver had seen the newest (optimistic); a
-- restore copies an earlier revision as a new one. Nothing is ever rewritten or dropped from the
-- history while the draft exists.
CREATE TABLE email_drafts (
    id          uuid        PRIMARY KEY,
    account_id  text        NOT NULL REFERENCES email_accounts ON DELETE CASCADE,
    thread      uuid        REFERENCES email_threads ON DELETE CASCADE,
    -- The newest revision's number.
    revision    integer     NOT NULL CHECK (revision >= 1),
    created_at  timestamptz NOT NULL,
    updated_at  timestamptz NOT NULL
);
CREATE INDEX email_drafts_by_thread ON email_drafts (thread) WHERE thread IS NOT NULL;

-- One saved version: recipients (addresses), subject and body; who wrote it (`owner`, or
-- `agent` for a proposal the owner edits) and the revision it restores, if it does.
CREATE TABLE email_draft_revisions (
    draft         uuid        NOT NULL REFERENCES email_drafts ON DELETE CASCADE,
    revision      integer     NOT NULL CHECK (revision >= 1),
    recipients    text[]      NOT NULL DEFAULT '{}',
    copied        text[]      NOT NULL DEFAULT '{}',
    subject       text        NOT NULL DEFAULT '',
    body          text        NOT NULL DEFAULT '',
    author        text        NOT NULL CHECK (author IN ('owner', 'agent')),
    restored_from integer     CHECK (restored_from IS NULL OR restored_from < revision),
    created_at    timestamptz NOT NULL,
    PRIMARY KEY (draft, revision)
);

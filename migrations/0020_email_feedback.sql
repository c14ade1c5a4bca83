-- Email mode's feedback and learning (issue 18). The owner says a conversation, a person's mail
-- or a kind of content is important or less important, or does or does not need a reply; each
-- is a rule applied to the conversation it was given on at once and to every later assessment
-- it matches (a conversation's own rule before a person's before a kind's; the newest first
-- within one). A thread keeps the classifier's own answer beside the one shown, and which rules
-- changed it, so an undo or a reset restores exactly the classifier's answer.
ALTER TABLE email_threads
    -- What kind of content the newest message is: `bulk` (lists, newsletters), `transactional`
    -- (receipts, notifications) or `personal`; set with the assessment.
    ADD COLUMN kind                text CHECK (kind IN ('bulk', 'transactional', 'personal')),
    ADD COLUMN assessed_importance text CHECK (assessed_importance IN ('important', 'other')),
    ADD COLUMN assessed_reply_need text CHECK (assessed_reply_need IN ('needs_reply', 'for_your_attention'));
UPDATE email_threads SET assessed_importance = importance, assessed_reply_need = reply_need;

CREATE TABLE email_feedback (
    id          uuid        PRIMARY KEY,
    scope       text        NOT NULL CHECK (scope IN ('thread', 'person', 'kind')),
    signal      text        NOT NULL CHECK (signal IN ('important', 'less_important', 'needs_reply', 'no_reply')),
    -- The conversation it was given on (for every scope: a person's or a kind's rule came from
    -- there, and an exclusion of that conversation's source retires it).
    thread      uuid        NOT NULL REFERENCES email_threads ON DELETE CASCADE,
    person      text        CHECK (person = lower(person)),
    kind        text        CHECK (kind IN ('bulk', 'transactional', 'personal')),
    created_at  timestamptz NOT NULL,
    -- Undone by the owner, or retired by a reset or an exclusion; a retired rule applies nowhere.
    retired_at  timestamptz,
    retired_by  text        CHECK (retired_by IN ('undo', 'reset', 'exclusion')),
    CHECK ((scope = 'person') = (person IS NOT NULL)),
    CHECK ((scope = 'kind') = (kind IS NOT NULL)),
    CHECK ((retired_at IS NULL) = (retired_by IS NULL))
);
CREATE INDEX email_feedback_active ON email_feedback (scope, person, kind) WHERE retired_at IS NULL;
CREATE INDEX email_feedback_by_thread ON email_feedback (thread);

ALTER TABLE email_threads
    ADD COLUMN importance_feedback uuid REFERENCES email_feedback ON DELETE SET NULL,
    ADD COLUMN reply_feedback      uuid REFERENCES email_feedback ON DELETE SET NULL;

-- Whether learning is paused (one row), and the sources never used for learning: a sender's
-- address, or a provider label.
CREATE TABLE email_learning (
    singleton boolean     PRIMARY KEY DEFAULT true CHECK (singleton),
    paused_at timestamptz
);
INSERT INTO email_learning (singleton) VALUES (true);

CREATE TABLE email_learning_exclusions (
    id         uuid        PRIMARY KEY,
    kind       text        NOT NULL CHECK (kind IN ('sender', 'label')),
    value      text        NOT NULL,
    created_at timestamptz NOT NULL,
    UNIQUE (kind, value)
);

-- Wording the owner endorsed as their writing style, from a saved revision of one of their
-- drafts (the agent's proposals follow it). A reset of everything retires it too.
CREATE TABLE email_style_samples (
    id         uuid        PRIMARY KEY,
    draft      uuid        NOT NULL,
    revision   integer     NOT NULL,
    text       text        NOT NULL CHECK (length(text) BETWEEN 1 AND 2000),
    created_at timestamptz NOT NULL,
    retired_at timestamptz,
    FOREIGN KEY (draft, revision) REFERENCES email_draft_revisions ON DELETE CASCADE
);

-- The agent's proposed reply (`propose_reply`, run by the async worker): it lands as an `agent`
-- revision of `draft` only while `draft_revision` is still the newest and the draft was not
-- frozen again since it was asked (`draft_send_run` is its newest freeze then), so it never
-- overwrites the owner's later words nor changes what an approval would send.
ALTER TABLE email_operations DROP CONSTRAINT email_operations_kind_check;
ALTER TABLE email_operations
    ADD CONSTRAINT email_operations_kind_check
        CHECK (kind IN ('refresh', 'archive', 'move_to_inbox', 'report_spam', 'not_spam', 'propose_reply')),
    ADD COLUMN draft          uuid    REFERENCES email_drafts ON DELETE CASCADE,
    ADD COLUMN draft_revision integer,
    ADD COLUMN draft_send_run uuid,
    ADD CONSTRAINT email_operations_proposal_draft
        CHECK ((kind = 'propose_reply') = (draft IS NOT NULL AND draft_revision IS NOT NULL));

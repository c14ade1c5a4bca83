-- Email mode: the mailbox projections the async worker keeps from each connected account's
-- provider (with the read document only), and the durable operations that change a mailbox
-- (run by the worker with the write document) or refresh it (run by the async worker).
--
-- Everything is scoped per account. No attachment bytes are ever stored, only their metadata;
-- message text is plain text reduced from the MIME structure, never remote content.

-- One row per connected account, made by the async worker when it first sees the account.
-- `history_id` is where the next incremental update starts (NULL: a full backfill is due);
-- `coverage_from` is the start of the backfill window (the historical coverage); `updated_at`
-- is the end of the last completed update (NULL: awaiting its first); the last refresh error is
-- a stable code, cleared by the next completed update. `waiting` says why new mail waits
-- unassessed (an email cost allowance is spent), NULL when nothing waits.
CREATE TABLE email_accounts (
    account_id      text        PRIMARY KEY,
    address         text,
    history_id      text,
    coverage_from   timestamptz,
    updated_at      timestamptz,
    last_error      text,
    last_error_at   timestamptz,
    waiting         text        CHECK (waiting IN ('daily_allowance_spent', 'monthly_allowance_spent')),
    CONSTRAINT email_accounts_error_has_time CHECK ((last_error IS NULL) = (last_error_at IS NULL))
);

-- A conversation as the provider groups it. `labels` is the union of its messages' labels;
-- `latest_at` the newest message's date. Assessment (`importance`, `reply_need`, `gist`) is
-- NULL until the pinned classifier (`classifier`) has assessed the newest message; `rule` says
-- which documented rule decided. `suspected_spam` is the server's own flag (cleared by the
-- owner with no provider write). `handled_at` is when the owner archived it through Steward.
CREATE TABLE email_threads (
    id                 uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id         text        NOT NULL REFERENCES email_accounts ON DELETE CASCADE,
    provider_thread_id text        NOT NULL,
    subject            text        NOT NULL DEFAULT '',
    correspondents     jsonb       NOT NULL DEFAULT '[]',
    latest_at          timestamptz NOT NULL,
    message_count      integer     NOT NULL DEFAULT 0 CHECK (message_count >= 0),
    has_attachments    boolean     NOT NULL DEFAULT false,
    labels             text[]      NOT NULL DEFAULT '{}',
    in_inbox           boolean     GENERATED ALWAYS AS ('INBOX' = ANY (labels)) STORED,
    in_spam            boolean     GENERATED ALWAYS AS ('SPAM' = ANY (labels)) STORED,
    suspected_spam     boolean     NOT NULL DEFAULT false,
    importance         text        CHECK (importance IN ('important', 'other')),
    reply_need         text        CHECK (reply_need IN ('needs_reply', 'for_your_attention')),
    gist               text,
    classifier         text,
    rule               text,
    assessed_at        timestamptz,
    handled_at         timestamptz,
    reported_at        timestamptz,
    -- Inbox order: needs a reply, then for your attention, then the rest; newest first.
    priority           smallint    GENERATED ALWAYS AS (
        CASE reply_need WHEN 'needs_reply' THEN 0 WHEN 'for_your_attention' THEN 1 ELSE 2 END
    ) STORED,
    UNIQUE (account_id, provider_thread_id),
    CONSTRAINT email_threads_assessed_together CHECK (
        (importance IS NULL) = (classifier IS NULL) AND (importance IS NULL) = (assessed_at IS NULL)
    )
);
-- The Important inbox's first page, and Other mail, in order.
CREATE INDEX email_threads_important ON email_threads (priority, latest_at DESC, id DESC)
    WHERE in_inbox AND importance = 'important';
CREATE INDEX email_threads_other ON email_threads (latest_at DESC, id DESC)
    WHERE NOT (in_inbox AND importance IS NOT DISTINCT FROM 'important');
-- New mail waiting for assessment, oldest first.
CREATE INDEX email_threads_unassessed ON email_threads (account_id, latest_at) WHERE importance IS NULL;

-- One message of a thread: correspondents, date, subject, plain text (cut past 100,000
-- characters, `text_cut`), attachment metadata (name, media type, size; never bytes) and which
-- bulk headers it carries (for the classifier).
CREATE TABLE email_messages (
    account_id          text        NOT NULL,
    provider_message_id text        NOT NULL,
    thread              uuid        NOT NULL REFERENCES email_threads ON DELETE CASCADE,
    sender              jsonb       NOT NULL,
    recipients          jsonb       NOT NULL DEFAULT '[]',
    copied              jsonb       NOT NULL DEFAULT '[]',
    sent_at             timestamptz NOT NULL,
    subject             text        NOT NULL DEFAULT '',
    body                text        NOT NULL DEFAULT '',
    text_cut            boolean     NOT NULL DEFAULT false,
    attachments         jsonb       NOT NULL DEFAULT '[]',
    bulk                jsonb       NOT NULL DEFAULT '{}',
    labels              text[]      NOT NULL DEFAULT '{}',
    PRIMARY KEY (account_id, provider_message_id)
);
CREATE INDEX email_messages_by_thread ON email_messages (thread, sent_at);

-- A durable mailbox operation. `refresh` is run by the async worker; the others are provider
-- writes run by the worker with the account's write document. A write is marked `dispatching`
-- (committed) before its request leaves; one whose outcome is unknown becomes `uncertain` and
-- is settled only by reading the thread's labels (`reconciled_at`), never by sending it again.
CREATE TABLE email_operations (
    id            uuid        PRIMARY KEY,
    account_id    text        NOT NULL REFERENCES email_accounts ON DELETE CASCADE,
    thread        uuid        REFERENCES email_threads ON DELETE CASCADE,
    kind          text        NOT NULL CHECK (kind IN ('refresh', 'archive', 'move_to_inbox', 'report_spam', 'not_spam')),
    state         text        NOT NULL DEFAULT 'queued'
                  CHECK (state IN ('queued', 'dispatching', 'succeeded', 'failed', 'uncertain')),
    error         text,
    claimed_by    text,
    lease_until   timestamptz,
    created_at    timestamptz NOT NULL DEFAULT now(),
    updated_at    timestamptz NOT NULL DEFAULT now(),
    reconciled_at timestamptz,
    CONSTRAINT email_operations_thread_for_writes CHECK ((kind = 'refresh') = (thread IS NULL))
);
CREATE INDEX email_operations_due ON email_operations (kind, created_at) WHERE state IN ('queued', 'dispatching', 'uncertain');
CREATE INDEX email_operations_refreshes ON email_operations (account_id, created_at DESC) WHERE kind = 'refresh';

-- What automatic model requests of Email mode cost, for the email cost allowances (USD micros;
-- `reported` is false when the provider reported no usage and the request's ceiling was charged).
CREATE TABLE email_charges (
    id         uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id text        NOT NULL REFERENCES email_accounts ON DELETE CASCADE,
    charged_at timestamptz NOT NULL,
    micros     bigint      NOT NULL CHECK (micros >= 0),
    reported   boolean     NOT NULL
);
CREATE INDEX email_charges_by_time ON email_charges (charged_at);

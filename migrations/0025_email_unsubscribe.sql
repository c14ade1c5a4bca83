-- Unsubscribe assistance (issue 32): the unsubscribe command and the owner's decisions.
--
-- One confirmed command is one `unsubscribe` operation (on one account) with a row per target
-- in `email_unsubscribe_targets`: the subscription, what was confirmed (mechanism, full target,
-- destination; a snapshot, so a later census cannot change what is sent) and whether the
-- sender's Inbox mail is archived afterwards. The worker marks a target `dispatching`
-- (committed) before its request leaves and settles it from the answer; a target left
-- dispatching by a worker that died is `uncertain` and is never sent again.
--
-- Writes made for a subscription (Report spam from its row, the archive after an unsubscribe,
-- Not spam that returns those threads) name it in `email_operations.subscription`, so Not spam
-- returns exactly the threads its Report spam moved.
ALTER TABLE email_operations DROP CONSTRAINT email_operations_kind_check;
ALTER TABLE email_operations
    ADD CONSTRAINT email_operations_kind_check
        CHECK (kind IN ('refresh', 'archive', 'move_to_inbox', 'report_spam', 'not_spam', 'propose_reply', 'unsubscribe')),
    DROP CONSTRAINT email_operations_thread_for_writes,
    ADD CONSTRAINT email_operations_thread_for_writes CHECK ((kind IN ('refresh', 'unsubscribe')) = (thread IS NULL)),
    ADD COLUMN subscription uuid REFERENCES email_subscriptions ON DELETE SET NULL;
CREATE INDEX email_operations_by_subscription ON email_operations (subscription) WHERE subscription IS NOT NULL;

CREATE TABLE email_unsubscribe_targets (
    operation    uuid        NOT NULL REFERENCES email_operations ON DELETE CASCADE,
    position     smallint    NOT NULL CHECK (position >= 0),
    subscription uuid        NOT NULL REFERENCES email_subscriptions ON DELETE CASCADE,
    mechanism    text        NOT NULL CHECK (mechanism IN ('one_click', 'mailto')),
    target       text        NOT NULL,
    destination  text        NOT NULL,
    also_archive boolean     NOT NULL,
    state        text        NOT NULL DEFAULT 'queued'
                 CHECK (state IN ('queued', 'dispatching', 'succeeded', 'failed', 'uncertain')),
    error        text,
    updated_at   timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (operation, position),
    UNIQUE (operation, subscription),
    CONSTRAINT email_unsubscribe_targets_error CHECK ((error IS NULL) = (state IN ('queued', 'dispatching', 'succeeded')))
);

-- What a kept sender had been before Keep (NULL: undecided), for Keep's undo.
ALTER TABLE email_subscriptions
    ADD COLUMN kept_from text CHECK (kept_from IN ('unsubscribed', 'still_sending', 'reported_spam'));

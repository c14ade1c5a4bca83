-- Unsubscribe assistance (issue 32): the subscription census the async worker keeps from the
-- bulk headers of each account's mail, one row per sender and account.
--
-- The evidence is the sender's newest message carrying `List-Unsubscribe`: `evidence_message`
-- names it, `evidence_check` says whether its DKIM signature verified (covering the headers,
-- aligned with From). Only a verified row has a `mechanism`; `target` is the full URI it sends
-- to and is never served to a client or logged (clients see `destination`: the one-click host,
-- or the mailto address). `digest` fingerprints mechanism, target and evidence: a command
-- carries the digest and `revision` it was confirmed against and is refused when either moved.
-- `decision` is the owner's (and survives the feature being turned off and on); `state` is what
-- clients see. `protected` marks known correspondents and senders of Important or Needs-reply
-- mail, which Select all skips.
CREATE TABLE email_subscriptions (
    id               uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    account_id       text        NOT NULL REFERENCES email_accounts ON DELETE CASCADE,
    sender           text        NOT NULL CHECK (sender = lower(sender) AND sender <> ''),
    sender_name      text,
    conversations    integer     NOT NULL DEFAULT 0 CHECK (conversations >= 0),
    last_arrival_at  timestamptz NOT NULL,
    evidence_message text        NOT NULL,
    evidence_check   text        NOT NULL DEFAULT 'pending' CHECK (evidence_check IN ('pending', 'verified', 'failed')),
    mechanism        text        CHECK (mechanism IN ('one_click', 'mailto')),
    target           text,
    destination      text,
    digest           text        NOT NULL,
    decision         text        CHECK (decision IN ('kept', 'unsubscribing', 'unsubscribed', 'still_sending', 'reported_spam')),
    decided_at       timestamptz,
    unsubscribed_at  timestamptz,
    last_error       text,
    protected        boolean     NOT NULL DEFAULT false,
    revision         bigint      NOT NULL DEFAULT 1 CHECK (revision >= 1),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    state            text        GENERATED ALWAYS AS (
        COALESCE(decision, CASE evidence_check WHEN 'verified' THEN 'eligible' ELSE 'unverified' END)
    ) STORED,
    UNIQUE (account_id, sender),
    CONSTRAINT email_subscriptions_mechanism_whole CHECK (
        (mechanism IS NULL) = (target IS NULL) AND (mechanism IS NULL) = (destination IS NULL)
    ),
    CONSTRAINT email_subscriptions_mechanism_verified CHECK (mechanism IS NULL OR evidence_check = 'verified'),
    CONSTRAINT email_subscriptions_decided_at CHECK ((decision IS NULL) = (decided_at IS NULL))
);
-- The list in server order: newest arrival first.
CREATE INDEX email_subscriptions_listing ON email_subscriptions (last_arrival_at DESC, id DESC);

-- When the async worker first projected a message, by the server's clock: a sender's mail that
-- arrives ten days after an unsubscribe makes the row `still_sending` (a message's own Date
-- header is the sender's to choose, so it cannot decide this).
ALTER TABLE email_messages ADD COLUMN projected_at timestamptz NOT NULL DEFAULT now();
CREATE INDEX email_messages_by_sender ON email_messages (account_id, (lower(sender->>'address')), sent_at DESC);

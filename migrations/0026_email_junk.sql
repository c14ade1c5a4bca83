-- The junk first pass (issue 33): content-free judgments of newly eligible mail, what the
-- filter did with them, the pilot's daily allowance and the journal of its model requests.
--
-- A thread the first pass kept out of the priority inbox is `filtered`: its assessment is the
-- filter's (Other, no reply need) and `junk_category` / `junk_probability` / `junk_mode` say
-- why, for the explanation clients show. When the filter's decision no longer holds (the mode
-- is off, the evidence lapsed, the owner said Important or Not spam) it becomes `restoring`:
-- it shows where it was until a later bounded refresh gives it ordinary assessment.
ALTER TABLE email_threads
    ADD COLUMN junk_state       text CHECK (junk_state IN ('filtered', 'restoring')),
    ADD COLUMN junk_category    text CHECK (junk_category IN ('spam', 'bulk')),
    ADD COLUMN junk_probability double precision CHECK (junk_probability BETWEEN 0 AND 1),
    ADD COLUMN junk_mode        text CHECK (junk_mode IN ('filter', 'pilot')),
    -- The owner said Not spam (the suspected-spam flag cleared, or a Not spam write): the
    -- conversation is protected from the first pass from then on.
    ADD COLUMN not_spam_at      timestamptz,
    ADD CONSTRAINT email_threads_junk_why CHECK (
        (junk_state IS NULL) = (junk_category IS NULL) AND (junk_category IS NULL) = (junk_probability IS NULL)
        AND (junk_category IS NULL) = (junk_mode IS NULL)
    );
CREATE INDEX email_threads_junk ON email_threads (account_id, junk_state, latest_at) WHERE junk_state IS NOT NULL;

-- One judgment per message the first pass looked at (never content: the message's
-- fingerprint, what was decided and why). A protected message is not judged: it has a
-- `protection` and no category.
CREATE TABLE email_junk_judgments (
    account_id          text             NOT NULL REFERENCES email_accounts ON DELETE CASCADE,
    provider_message_id text             NOT NULL,
    thread              uuid             NOT NULL REFERENCES email_threads ON DELETE CASCADE,
    fingerprint         text             NOT NULL CHECK (fingerprint ~ '^[0-9a-f]{64}$'),
    mode                text             NOT NULL CHECK (mode IN ('shadow', 'filter', 'pilot')),
    policy              text             NOT NULL,
    model               text             NOT NULL,
    category            text             CHECK (category IN ('spam', 'bulk', 'keep')),
    probability         double precision CHECK (probability BETWEEN 0 AND 1),
    protection          text             CHECK (protection IN ('known_correspondent', 'kept_subscription',
                            'important', 'needs_reply', 'not_spam', 'unknown_attachment', 'incomplete_source',
                            'uncertain')),
    outcome             text             NOT NULL CHECK (outcome IN ('recorded', 'filtered', 'protected', 'kept', 'no_slot')),
    judged_at           timestamptz      NOT NULL,
    PRIMARY KEY (account_id, provider_message_id),
    CONSTRAINT email_junk_judgments_probability CHECK ((category IS NULL) = (probability IS NULL)),
    CONSTRAINT email_junk_judgments_protected CHECK ((outcome = 'protected') = (protection IS NOT NULL))
);
CREATE INDEX email_junk_judgments_by_thread ON email_junk_judgments (thread);

-- The pilot's allowance: new conversations kept out of the priority inbox per UTC day. Keyed
-- by the day alone, so a changed packet never resets it.
CREATE TABLE email_junk_pilot_days (
    day  date    PRIMARY KEY,
    used integer NOT NULL CHECK (used BETWEEN 0 AND 50)
);

-- The journal of the first pass's model requests (`email.junk.started` written before the
-- request leaves, `email.junk.completed` with its charge after), for judgments and for the
-- calibration tool's replay. A request started and never completed is charged its ceiling.
CREATE TABLE email_junk_events (
    request        uuid        NOT NULL,
    kind           text        NOT NULL CHECK (kind IN ('email.junk.started', 'email.junk.completed')),
    purpose        text        NOT NULL CHECK (purpose IN ('judgment', 'calibration')),
    account_id     text        NOT NULL REFERENCES email_accounts ON DELETE CASCADE,
    at             timestamptz NOT NULL,
    ceiling_micros bigint      NOT NULL CHECK (ceiling_micros >= 0),
    charge_micros  bigint      CHECK (charge_micros >= 0),
    reported       boolean,
    outcome        text        CHECK (outcome IN ('answered', 'unreadable', 'failed')),
    PRIMARY KEY (request, kind),
    CONSTRAINT email_junk_events_completion CHECK (
        (kind = 'email.junk.completed') = (charge_micros IS NOT NULL)
        AND (charge_micros IS NULL) = (reported IS NULL) AND (charge_micros IS NULL) = (outcome IS NULL)
    )
);
CREATE INDEX email_junk_events_open ON email_junk_events (at) WHERE kind = 'email.junk.started';

-- The mode in force per account and why it is not the configured one, as the async worker
-- last found it (the API reports it; only the async worker reads the evidence packet).
ALTER TABLE email_accounts
    ADD COLUMN junk_mode       text CHECK (junk_mode IN ('off', 'shadow', 'filter', 'pilot')),
    ADD COLUMN junk_in_force   text CHECK (junk_in_force IN ('off', 'shadow', 'filter', 'pilot')),
    ADD COLUMN junk_reason     text CHECK (junk_reason IN ('packet_missing', 'packet_invalid', 'packet_mismatched',
                                   'packet_expired', 'floor_not_met', 'not_pilot_account')),
    ADD COLUMN junk_checked_at timestamptz;

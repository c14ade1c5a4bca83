-- People (issue 36): the owner's correspondents as records the owner keeps. The async worker
-- gathers them from projected mail (each message once: `email_messages.people_seen_at`); the
-- owner pins, reviews, renames, merges, tells apart, repairs and forgets them.

CREATE TABLE people (
    id            uuid        PRIMARY KEY,
    principal_id  text        NOT NULL,
    -- The listing's order, newest first, and its cursor's position: it never changes.
    position      bigint      GENERATED ALWAYS AS IDENTITY UNIQUE,
    name          text        NOT NULL CHECK (char_length(name) BETWEEN 1 AND 200),
    relationship  text        CHECK (char_length(relationship) BETWEEN 1 AND 100),
    pinned        boolean     NOT NULL DEFAULT false,
    -- Gathered from mail and not reviewed by the owner yet.
    needs_review  boolean     NOT NULL,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL
);
CREATE INDEX people_listing ON people (principal_id, position DESC);

-- How a person is reached: an address (lower case) or a number (`+` and digits). A contact is
-- one person's; merging moves it, and a later gathering finds it where the owner put it.
CREATE TABLE person_contacts (
    principal_id text        NOT NULL,
    kind         text        NOT NULL CHECK (kind IN ('email', 'phone')),
    value        text        NOT NULL CHECK (value <> ''),
    person_id    uuid        NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    -- The display name it was last seen with.
    name_seen    text,
    first_seen   timestamptz NOT NULL,
    last_seen    timestamptz NOT NULL,
    PRIMARY KEY (principal_id, kind, value)
);
CREATE INDEX person_contacts_of_person ON person_contacts (person_id);

-- What is known about a person, each with its evidence (a mail message, a conversation's run,
-- or the owner's own word) and the owner's correction, which replaces it where shown.
CREATE TABLE person_facts (
    id                  uuid        PRIMARY KEY,
    person_id           uuid        NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    statement           text        NOT NULL CHECK (char_length(statement) BETWEEN 1 AND 300),
    normalized          text        NOT NULL CHECK (normalized <> ''),
    source              text        NOT NULL CHECK (source IN ('email', 'conversation', 'owner')),
    email_thread        uuid        REFERENCES email_threads (id) ON DELETE SET NULL,
    provider_message_id text,
    session_id          uuid        REFERENCES sessions (id) ON DELETE SET NULL,
    run_id              uuid        REFERENCES runs (id) ON DELETE SET NULL,
    noted_at            timestamptz NOT NULL,
    correction          text        CHECK (char_length(correction) BETWEEN 1 AND 300),
    corrected_at        timestamptz,
    UNIQUE (person_id, normalized),
    CHECK ((correction IS NULL) = (corrected_at IS NULL))
);

-- `Not the same`: two records the owner told apart are never offered as duplicates again.
CREATE TABLE person_distinctions (
    principal_id text        NOT NULL,
    first        uuid        NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    second       uuid        NOT NULL REFERENCES people (id) ON DELETE CASCADE,
    decided_at   timestamptz NOT NULL,
    PRIMARY KEY (first, second),
    CHECK (first < second)
);
CREATE INDEX person_distinctions_second ON person_distinctions (second);

-- `Forget person`: the contacts of a forgotten person, kept only as SHA-256 digests of their
-- stored form, so the same sources do not make the record again unless the owner asks.
CREATE TABLE people_forgotten (
    principal_id text        NOT NULL,
    kind         text        NOT NULL CHECK (kind IN ('email', 'phone')),
    digest       bytea       NOT NULL CHECK (octet_length(digest) = 32),
    forgotten_at timestamptz NOT NULL,
    PRIMARY KEY (principal_id, kind, digest)
);

-- Each projected message is gathered into people once.
ALTER TABLE email_messages ADD COLUMN people_seen_at timestamptz;
CREATE INDEX email_messages_ungathered ON email_messages (sent_at) WHERE people_seen_at IS NULL;
-- A person's timeline: the messages they sent.
CREATE INDEX email_messages_by_sender_address ON email_messages ((lower(sender->>'address')), sent_at DESC);

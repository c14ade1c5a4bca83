-- Folder proposals: the agent's `folders.propose` tool suggests filing conversations into an
-- existing folder or a new one; nothing changes until the owner accepts (which files the
-- sessions in one transaction) or declines (which is remembered: a declined session is never
-- proposed for the same folder again).
CREATE TABLE folder_proposals (
    id            uuid        PRIMARY KEY,
    principal_id  text        NOT NULL,
    -- Exactly one target: an existing folder (deleting it deletes the proposal) or a new name.
    folder_id     uuid        REFERENCES folders (id) ON DELETE CASCADE,
    folder_name   text        CHECK (char_length(folder_name) BETWEEN 1 AND 100),
    status        text        NOT NULL DEFAULT 'pending'
                              CHECK (status IN ('pending', 'accepted', 'declined')),
    -- The tool invocation that made it: a repeated dispatch finds it instead of proposing twice.
    invocation_id uuid        NOT NULL UNIQUE,
    created_at    timestamptz NOT NULL DEFAULT now(),
    resolved_at   timestamptz,
    CONSTRAINT folder_proposals_one_target CHECK ((folder_id IS NULL) <> (folder_name IS NULL)),
    CONSTRAINT folder_proposals_resolved_when_settled CHECK ((status = 'pending') = (resolved_at IS NULL))
);
CREATE INDEX folder_proposals_pending ON folder_proposals (principal_id, created_at)
    WHERE status = 'pending';

-- The sessions a proposal would file. Deleting a session takes it out of every proposal.
CREATE TABLE folder_proposal_sessions (
    proposal_id uuid NOT NULL REFERENCES folder_proposals (id) ON DELETE CASCADE,
    session_id  uuid NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    PRIMARY KEY (proposal_id, session_id)
);
CREATE INDEX folder_proposal_sessions_by_session ON folder_proposal_sessions (session_id);

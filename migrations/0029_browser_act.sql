-- The agent's browser actions (issue 35, `browser.act`). A conversation may name one ready
-- browser profile, chosen when it is created; the worker acts on that profile's sites.
ALTER TABLE sessions ADD COLUMN browser_profile_id uuid REFERENCES browser_profiles (id) ON DELETE SET NULL;

-- A task permission (`Allow all actions for this task`): within one run, the browser actions
-- on its origins that are not among its exceptions are approved by it, at most `max_actions`
-- of them (the one whose approval granted it counted first) until `expires_at`, unless the
-- owner stops it first. It never stands for an exception.
CREATE TABLE browser_task_permissions (
    id            uuid        PRIMARY KEY,
    principal_id  text        NOT NULL,
    session_id    uuid        NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
    run_id        uuid        NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    profile_id    uuid        NOT NULL REFERENCES browser_profiles (id) ON DELETE CASCADE,
    origins       text[]      NOT NULL CHECK (cardinality(origins) BETWEEN 1 AND 10),
    exceptions    text[]      NOT NULL CHECK (exceptions <@ ARRAY['purchase', 'sign_out']::text[]),
    max_actions   integer     NOT NULL CHECK (max_actions BETWEEN 1 AND 100),
    actions_used  integer     NOT NULL DEFAULT 1 CHECK (actions_used BETWEEN 0 AND max_actions),
    expires_at    timestamptz NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    stopped_at    timestamptz,
    CHECK (expires_at > created_at)
);
CREATE INDEX browser_task_permissions_of_run ON browser_task_permissions (run_id, created_at DESC);
CREATE INDEX browser_task_permissions_of_owner ON browser_task_permissions (principal_id, created_at DESC)
    WHERE stopped_at IS NULL;

-- What an approval of a browser action offers and how it was approved. `task_offer` is the
-- permission the owner may grant instead of approving once (never for an exception);
-- `approved_for` says whether an approved action was allowed once or for the task, and
-- `task_permission_id` names the permission (the one it granted, or the one that covered it).
ALTER TABLE approvals
    ADD COLUMN task_offer jsonb CHECK (task_offer IS NULL OR jsonb_typeof(task_offer) = 'object'),
    ADD COLUMN approved_for text CHECK (approved_for IN ('once', 'task')),
    ADD COLUMN task_permission_id uuid REFERENCES browser_task_permissions (id) ON DELETE SET NULL;
UPDATE approvals SET approved_for = 'once' WHERE status = 'APPROVED';
ALTER TABLE approvals ADD CONSTRAINT approvals_approved_for
    CHECK ((status = 'APPROVED') = (approved_for IS NOT NULL));

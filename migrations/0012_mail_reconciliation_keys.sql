-- A mail write or send arms its reconciliation in the transaction that marks it dispatching, so
-- what a search needs (account, operation, Message-ID, when it left) is recorded before the
-- request can reach the provider: a crash, a worker without mail (a rollback) or a later change
-- of the accounts manifest cannot lose it. The row then becomes `pending` (the outcome is
-- unknown: search), or `settled` (the outcome is known: nothing to search). Rows are kept, as the
-- record of which invocation made which message; they hold no message content.

ALTER TABLE mail_reconciliations DROP CONSTRAINT mail_reconciliations_state_check;
ALTER TABLE mail_reconciliations ADD CONSTRAINT mail_reconciliations_state_check
    CHECK (state IN ('dispatching', 'settled', 'pending', 'found', 'not_found'));

-- When the request left, bounding the dates a header search looks at.
ALTER TABLE mail_reconciliations ADD COLUMN dispatched_at timestamptz;
UPDATE mail_reconciliations SET dispatched_at = created_at;
ALTER TABLE mail_reconciliations ALTER COLUMN dispatched_at SET NOT NULL,
    ALTER COLUMN dispatched_at SET DEFAULT now();

-- Searches that completed (the provider answered, or refused for good): `not_found` is decided
-- on these, never on attempts the provider could not answer.
ALTER TABLE mail_reconciliations ADD COLUMN searches integer NOT NULL DEFAULT 0;
UPDATE mail_reconciliations SET searches = attempts;

-- The sweep of dispatches a dead worker left on finished runs looks only at these.
CREATE INDEX tool_invocations_dispatching ON tool_invocations (updated_at) WHERE state = 'dispatching';

-- A new proposal waits while its session has a write or send of unknown outcome to the same
-- account and operation.
CREATE INDEX mail_reconciliations_open ON mail_reconciliations (session_id, account_id, operation)
    WHERE state IN ('dispatching', 'pending');

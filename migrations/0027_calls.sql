-- Calling (issue 34): the call worker settles receipts into `call` rows, and outbound calls
-- live there from the owner's approval of their brief to their end.
--
-- An outbound call is `approved` (the reservation: the brief as approved, pinned to the call
-- configuration's revision), `dispatching` (the call worker's request is leaving: if it never
-- learns the answer the call is `uncertain`, reconciled from the provider's history and never
-- redialled), `dispatched` (the provider accepted it; not necessarily answered), then
-- `finished`, or `not_placed` (refused, a changed revision, or reconciliation found nothing)
-- or `cancelled` (the owner cancelled it before dispatch). At most one outbound call is
-- reserved at a time. An inbound call arrives `finished`. After 30 days a record's transcript
-- and summary are removed (`expired_at`); the owner's delete removes them at once and hides
-- the record (`deleted_at`), and the call worker then redacts what was derived from it
-- (`redacted_at`).
ALTER TABLE call_records ALTER COLUMN provider_call_id DROP NOT NULL;
ALTER TABLE call_records
    ADD COLUMN direction        text CHECK (direction IN ('inbound', 'outbound')),
    ADD COLUMN state            text CHECK (state IN ('approved', 'dispatching', 'uncertain', 'dispatched',
                                                      'finished', 'not_placed', 'cancelled')),
    -- The other party's number (E.164).
    ADD COLUMN counterpart      text,
    -- Outbound: the brief word for word, the revision it was approved under, and where.
    ADD COLUMN brief            jsonb,
    ADD COLUMN revision         text CHECK (revision ~ '^[0-9a-f]{64}$'),
    ADD COLUMN session_id       uuid REFERENCES sessions (id) ON DELETE SET NULL,
    ADD COLUMN invocation_id    uuid UNIQUE,
    -- The call as the provider reported it at its end.
    ADD COLUMN transcript       jsonb,
    ADD COLUMN summary          text,
    ADD COLUMN answered_by      text,
    ADD COLUMN duration_seconds integer CHECK (duration_seconds >= 0),
    -- Why an outbound call was not placed (a stable code, no content).
    ADD COLUMN failure          text CHECK (failure IN ('refused', 'revision_changed', 'configuration_missing',
                                                        'brief_invalid', 'not_found_at_provider', 'result_unavailable')),
    ADD COLUMN dispatched_at    timestamptz,
    ADD COLUMN finished_at      timestamptz,
    ADD COLUMN terminated_at    timestamptz,
    ADD COLUMN expired_at       timestamptz,
    ADD COLUMN deleted_at       timestamptz,
    ADD COLUMN redacted_at      timestamptz,
    ADD COLUMN updated_at       timestamptz NOT NULL DEFAULT now(),
    ADD CONSTRAINT call_records_kinds CHECK (
        CASE kind
            WHEN 'receipt' THEN provider_call_id IS NOT NULL AND direction IS NULL AND state IS NULL
            ELSE direction IS NOT NULL AND state IS NOT NULL
                 AND (direction = 'inbound' OR revision IS NOT NULL)
                 AND (direction = 'inbound' OR brief IS NOT NULL OR deleted_at IS NOT NULL)
        END
    );

-- One record per provider call.
CREATE UNIQUE INDEX call_records_one_call ON call_records (provider_call_id)
    WHERE kind = 'call' AND provider_call_id IS NOT NULL;
-- One outbound reservation at a time.
CREATE UNIQUE INDEX call_records_one_outbound ON call_records (principal_id)
    WHERE kind = 'call' AND direction = 'outbound' AND state IN ('approved', 'dispatching', 'uncertain', 'dispatched');
-- The owner's list, newest first.
CREATE INDEX call_records_listed ON call_records (received_at DESC, id DESC)
    WHERE kind = 'call' AND deleted_at IS NULL;
-- The call worker's sweeps.
CREATE INDEX call_records_expiring ON call_records (finished_at)
    WHERE kind = 'call' AND expired_at IS NULL AND finished_at IS NOT NULL;

-- Call records. Two kinds share the table: `receipt` rows are written by the call-ingress
-- listener when the call provider's signed webhook arrives (only the provider's call id is
-- queued), and `call` rows are the calling feature's own records. Row security is forced: the
-- policies (policies/grants.sql) pin rows to the owner principal and confine the ingress login
-- to receipts, for reads and writes alike.

CREATE TABLE call_records (
    id                uuid        PRIMARY KEY DEFAULT gen_random_uuid(),
    principal_id      text        NOT NULL DEFAULT 'owner',
    kind              text        NOT NULL CHECK (kind IN ('receipt', 'call')),
    provider_call_id  text        NOT NULL CHECK (provider_call_id ~ '^[A-Za-z0-9._:-]{1,128}$'),
    received_at       timestamptz NOT NULL DEFAULT now(),
    last_received_at  timestamptz NOT NULL DEFAULT now(),
    deliveries        integer     NOT NULL DEFAULT 1 CHECK (deliveries > 0),
    processed_at      timestamptz
);

-- One receipt per provider call: repeated deliveries of a webhook count up on the same row.
CREATE UNIQUE INDEX call_records_one_receipt ON call_records (provider_call_id) WHERE kind = 'receipt';
CREATE INDEX call_records_unprocessed ON call_records (received_at) WHERE processed_at IS NULL;

ALTER TABLE call_records ENABLE ROW LEVEL SECURITY;
ALTER TABLE call_records FORCE ROW LEVEL SECURITY;

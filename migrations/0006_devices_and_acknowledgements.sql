-- Push devices and acknowledgements: a device registers its push token per environment; a
-- notification acknowledged on one device is settled on all.

CREATE TABLE devices (
    id                 uuid        PRIMARY KEY,
    principal_id       text        NOT NULL,
    client_device_id   text        NOT NULL,
    push_token         text        NOT NULL,
    environment        text        NOT NULL CHECK (environment IN ('sandbox', 'production')),
    active             boolean     NOT NULL DEFAULT true,
    -- `revoked` by the owner, or the push provider's reason (e.g. `Unregistered`).
    deactivated_reason text,
    created_at         timestamptz NOT NULL DEFAULT now(),
    updated_at         timestamptz NOT NULL DEFAULT now(),
    UNIQUE (principal_id, client_device_id)
);

ALTER TABLE notification_outbox ADD COLUMN acknowledged_at timestamptz;
CREATE INDEX notification_outbox_pending ON notification_outbox (created_at)
    WHERE obsolete_at IS NULL AND acknowledged_at IS NULL;

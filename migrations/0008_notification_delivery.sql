-- Push delivery: the notify role claims due notifications with a lease (so a crashed notifier's
-- claims expire and nothing is lost), records each device it delivered to (so a retry skips
-- them), and withdraws delivered alerts that became obsolete or were acknowledged.

ALTER TABLE notification_outbox
    ADD COLUMN claimed_by       text,
    ADD COLUMN claim_expires_at timestamptz,
    ADD COLUMN attempts         integer     NOT NULL DEFAULT 0,
    ADD COLUMN delivered_at     timestamptz,
    ADD COLUMN withdrawn_at     timestamptz;
CREATE INDEX notification_outbox_due ON notification_outbox (deliver_after)
    WHERE delivered_at IS NULL AND obsolete_at IS NULL AND acknowledged_at IS NULL;

CREATE TABLE notification_deliveries (
    notification_id uuid        NOT NULL REFERENCES notification_outbox (id) ON DELETE CASCADE,
    device_id       uuid        NOT NULL REFERENCES devices (id) ON DELETE CASCADE,
    delivered_at    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (notification_id, device_id)
);

-- Web Push devices (issue 38): an installed web client's push subscription (RFC 8030) is a device
-- beside APNs tokens. For `web_push`, `push_token` holds the push service's endpoint (an https
-- URL), `web_push_p256dh` the subscription's P-256 public key and `web_push_auth` its 16-byte
-- authentication secret (both base64url, as the browser gives them); there is no environment.
ALTER TABLE devices
    ADD COLUMN kind text NOT NULL DEFAULT 'apns',
    ADD COLUMN web_push_p256dh text,
    ADD COLUMN web_push_auth text,
    ALTER COLUMN environment DROP NOT NULL,
    DROP CONSTRAINT devices_environment_check,
    ADD CONSTRAINT devices_kind_fields CHECK (
        (kind = 'apns' AND environment IN ('sandbox', 'production')
            AND web_push_p256dh IS NULL AND web_push_auth IS NULL)
        OR (kind = 'web_push' AND environment IS NULL
            AND web_push_p256dh IS NOT NULL AND web_push_auth IS NOT NULL));

-- Web sessions: the web client exchanges the bearer token once for an HttpOnly cookie bound to
-- one of these rows, so no script of the page can read a credential afterwards.
--
-- The cookie holds a random secret; only its SHA-256 digest is stored. `token_binding` is an
-- HMAC of a fixed label keyed by the configured bearer token: when the operator changes the
-- token, no stored session matches the new binding and every one of them stops working.
-- `scopes` are the token's grants at the exchange; a request gets them intersected with the
-- grants configured now. Revoking deletes the row.
CREATE TABLE web_sessions (
    id            uuid        PRIMARY KEY,
    secret_digest bytea       NOT NULL UNIQUE CHECK (octet_length(secret_digest) = 32),
    token_binding bytea       NOT NULL CHECK (octet_length(token_binding) = 32),
    principal_id  text        NOT NULL,
    scopes        text[]      NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now(),
    expires_at    timestamptz NOT NULL,
    CONSTRAINT web_sessions_expire_after_creation CHECK (expires_at > created_at)
);
CREATE INDEX web_sessions_by_expiry ON web_sessions (expires_at);

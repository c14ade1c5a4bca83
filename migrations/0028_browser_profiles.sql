-- Website Access (issue 35): the owner's browser profiles and their sign-in ceremonies, as the
-- API knows them. A profile is `pending` from its creation until its first ceremony completes,
-- then `ready`; `revoked` once removed (a pending profile is deleted instead: it was never
-- used). Its origins are exact public HTTPS origins, the first being the primary one. Nothing
-- of a website session lives here: cookies and local storage are sealed by the browser role;
-- a ceremony's capability and its login page's address are never stored.
CREATE TABLE browser_profiles (
    id             uuid        PRIMARY KEY,
    principal_id   text        NOT NULL,
    origins        text[]      NOT NULL CHECK (cardinality(origins) BETWEEN 1 AND 10),
    state          text        NOT NULL CHECK (state IN ('pending', 'ready', 'revoked')),
    created_at     timestamptz NOT NULL DEFAULT now(),
    ready_at       timestamptz,
    revoked_at     timestamptz,
    updated_at     timestamptz NOT NULL DEFAULT now(),
    CHECK (state <> 'ready' OR ready_at IS NOT NULL),
    CHECK ((state = 'revoked') = (revoked_at IS NOT NULL))
);
CREATE INDEX browser_profiles_listed ON browser_profiles (principal_id, created_at DESC, id DESC);

-- A ceremony's secret-free record: its kind, its last known state (the browser role holds the
-- truth while it is open) and when its capability expires.
CREATE TABLE browser_ceremonies (
    id           uuid        PRIMARY KEY,
    profile_id   uuid        NOT NULL REFERENCES browser_profiles (id) ON DELETE CASCADE,
    principal_id text        NOT NULL,
    kind         text        NOT NULL CHECK (kind IN ('device', 'remote')),
    state        text        NOT NULL CHECK (state IN ('open', 'active', 'completed', 'rejected', 'expired', 'cancelled')),
    expires_at   timestamptz NOT NULL,
    created_at   timestamptz NOT NULL DEFAULT now(),
    settled_at   timestamptz
);
CREATE INDEX browser_ceremonies_of_profile ON browser_ceremonies (profile_id, created_at DESC);

-- The stream key: 32 random bytes under which the worker seals a run's streamed text and
-- reasoning before they travel on NOTIFY, which every login can LISTEN to (store::sealed). Only
-- the worker and the api logins may read it (policies/grants.sql). gen_random_uuid() draws from
-- the server's strong random source; two of them give 244 random bits.
CREATE TABLE stream_keys (
    id  smallint PRIMARY KEY CHECK (id = 1),
    key bytea    NOT NULL CHECK (octet_length(key) = 32)
);
INSERT INTO stream_keys (id, key) VALUES (1, uuid_send(gen_random_uuid()) || uuid_send(gen_random_uuid()));

-- Steward's database logins: one per role, plus the migration owner. Cluster-wide, so it is run
-- once per PostgreSQL cluster by an administrator (a superuser, or a role with CREATEROLE) and is
-- safe to run again: missing logins are created, and every login's attributes and memberships
-- are reset to exactly these, correcting any drift.
--
--   psql -v ON_ERROR_STOP=1 -d postgres -f policies/logins.sql
--
-- No login gets a password here: in production each role authenticates by peer over the Unix
-- socket, mapped from its OS user (see policies/README.md); `cargo xtask dev` and the tests use a
-- private cluster reachable only by its owner.
DO $logins$
DECLARE
    login text;
    membership record;
BEGIN
    FOREACH login IN ARRAY ARRAY[
        'steward_owner',
        'steward_api', 'steward_worker', 'steward_async_worker', 'steward_schedule',
        'steward_notify', 'steward_maintenance', 'steward_call', 'steward_ingress'
    ] LOOP
        IF NOT EXISTS (SELECT 1 FROM pg_roles WHERE rolname = login) THEN
            EXECUTE format('CREATE ROLE %I LOGIN', login);
        END IF;
        -- The owner inherits only the implicit pg_database_owner membership of the database it
        -- owns (it holds no other); daemon logins inherit nothing.
        EXECUTE format(
            'ALTER ROLE %I LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS %s',
            login,
            CASE WHEN login = 'steward_owner' THEN 'INHERIT' ELSE 'NOINHERIT' END
        );
        -- No login inherits anything: every membership it holds is revoked.
        FOR membership IN
            SELECT granted.rolname AS role_name
            FROM pg_auth_members m
            JOIN pg_roles granted ON granted.oid = m.roleid
            JOIN pg_roles member ON member.oid = m.member
            WHERE member.rolname = login
        LOOP
            EXECUTE format('REVOKE %I FROM %I', membership.role_name, login);
        END LOOP;
    END LOOP;
END
$logins$;

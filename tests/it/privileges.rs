//! The role × table × privilege matrix, row security on call records, and the logins' catalog
//! attributes, checked against a real database built as in production (logins, migrations as
//! the owner, then `policies/grants.sql`).

use std::collections::{BTreeMap, BTreeSet};

use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, PgConnection, PgPool};
use store::policies::{self, GrantOptions, OWNER_LOGIN, ROLE_LOGINS};
use testkit::TestDatabase;

const PRIVILEGES: [(char, &str); 4] = [('S', "SELECT"), ('I', "INSERT"), ('U', "UPDATE"), ('D', "DELETE")];

/// One cell of `policies/privileges.md`: always granted, and granted only with call
/// notifications on.
#[derive(Clone, Debug, Default)]
struct Cell {
    always: BTreeSet<char>,
    with_call_notifications: BTreeSet<char>,
}

/// table → role → expected privileges, parsed from the expected matrix kept in the repository.
fn expected() -> BTreeMap<String, BTreeMap<String, Cell>> {
    let text = include_str!("../../policies/privileges.md");
    let mut lines = text.lines().skip_while(|line| !line.starts_with("| table | api |"));
    let header: Vec<String> = cells(lines.next().expect("the matrix header"));
    let roles: Vec<&str> = ROLE_LOGINS.iter().map(|(role, _)| *role).collect();
    assert_eq!(header[1..], roles, "the matrix columns are the roles, in order");
    let mut matrix = BTreeMap::new();
    for line in lines.skip(1).take_while(|line| line.starts_with('|')) {
        let row = cells(line);
        let table = row[0].trim_matches('`').to_owned();
        let mut by_role = BTreeMap::new();
        for (role, cell) in roles.iter().zip(&row[1..]) {
            let mut parsed = Cell::default();
            if cell != "-" {
                match cell.strip_prefix('(').and_then(|rest| rest.strip_suffix(')')) {
                    Some(conditional) => parsed.with_call_notifications.extend(conditional.chars()),
                    None => parsed.always.extend(cell.chars()),
                }
            }
            for letter in parsed.always.iter().chain(&parsed.with_call_notifications) {
                assert!("SIUDsiu".contains(*letter), "{table}/{role}: `{cell}`");
            }
            by_role.insert((*role).to_owned(), parsed);
        }
        matrix.insert(table, by_role);
    }
    assert!(matrix.len() > 10, "the matrix was parsed");
    matrix
}

/// (table, role, privilege) → the columns it is granted on, from the column-limited table of
/// `policies/privileges.md`.
fn expected_columns() -> BTreeMap<(String, String, String), BTreeSet<String>> {
    let text = include_str!("../../policies/privileges.md");
    let mut lines = text
        .lines()
        .skip_while(|line| !line.starts_with("| table | login | privilege | columns |"));
    lines.next().expect("the column-limited header");
    lines
        .skip(1)
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            let row = cells(line);
            let columns = row[3]
                .split(',')
                .map(|column| column.trim().trim_matches('`').to_owned())
                .collect();
            (
                (row[0].trim_matches('`').to_owned(), row[1].clone(), row[2].clone()),
                columns,
            )
        })
        .collect()
}

/// The columns of `table` on which `login` holds `privilege`, through a column grant or the
/// table's.
async fn columns_with(db: &TestDatabase, login: &str, table: &str, privilege: &str) -> BTreeSet<String> {
    sqlx::query_scalar(
        "SELECT a.attname::text FROM pg_attribute a
         WHERE a.attrelid = $2::regclass AND a.attnum > 0 AND NOT a.attisdropped
           AND has_column_privilege($1, a.attrelid, a.attnum, $3)",
    )
    .bind(login)
    .bind(table)
    .bind(privilege)
    .fetch_all(&db.pool)
    .await
    .expect("has_column_privilege")
    .into_iter()
    .collect()
}

/// function → logins that may execute it, from the functions table of `policies/privileges.md`.
fn expected_functions() -> BTreeMap<String, BTreeSet<String>> {
    let text = include_str!("../../policies/privileges.md");
    let mut lines = text.lines().skip_while(|line| !line.starts_with("| function | api |"));
    let header: Vec<String> = cells(lines.next().expect("the functions header"));
    let roles: Vec<&str> = ROLE_LOGINS.iter().map(|(role, _)| *role).collect();
    assert_eq!(header[1..], roles, "the function columns are the roles, in order");
    lines
        .skip(1)
        .take_while(|line| line.starts_with('|'))
        .map(|line| {
            let row = cells(line);
            let allowed = roles
                .iter()
                .zip(&row[1..])
                .filter(|(role, cell)| {
                    assert!(*cell == "X" || *cell == "-", "{}/{role}: `{cell}`", row[0]);
                    *cell == "X"
                })
                .map(|(role, _)| (*role).to_owned())
                .collect();
            (row[0].trim_matches('`').to_owned(), allowed)
        })
        .collect()
}

fn cells(line: &str) -> Vec<String> {
    line.trim()
        .trim_matches('|')
        .split('|')
        .map(|cell| cell.trim().to_owned())
        .collect()
}

async fn connect_as(db: &TestDatabase, who: &str) -> PgConnection {
    let options: PgConnectOptions = db.url_as(who).parse().expect("url");
    PgConnection::connect_with(&options)
        .await
        .unwrap_or_else(|error| panic!("{who} connects: {error}"))
}

async fn pool_as(db: &TestDatabase, who: &str) -> PgPool {
    let options: PgConnectOptions = db.url_as(who).parse().expect("url");
    PgPoolOptions::new()
        .max_connections(1)
        .connect_with(options)
        .await
        .unwrap_or_else(|error| panic!("{who} connects: {error}"))
}

/// Whether `statement` passes the privilege check. It runs in a transaction that is always
/// rolled back; any outcome but "permission denied" (success, a constraint or row-security
/// violation) means the privilege is held.
async fn permitted(connection: &mut PgConnection, statement: &str) -> bool {
    let mut transaction = connection.begin().await.expect("begin");
    let outcome = sqlx::raw_sql(statement).execute(&mut *transaction).await;
    transaction.rollback().await.expect("rollback");
    match outcome {
        Ok(_) => true,
        Err(sqlx::Error::Database(error)) if error.code().as_deref() == Some("42501") => {
            !error.message().starts_with("permission denied")
        }
        Err(sqlx::Error::Database(_)) => true,
        Err(error) => panic!("`{statement}`: {error}"),
    }
}

fn attempt(privilege: &str, table: &str, column: &str) -> String {
    match privilege {
        "SELECT" => format!("SELECT FROM {table} WHERE false"),
        "INSERT" => format!("INSERT INTO {table} DEFAULT VALUES"),
        "UPDATE" => format!("UPDATE {table} SET {column} = DEFAULT WHERE false"),
        "DELETE" => format!("DELETE FROM {table} WHERE false"),
        other => unreachable!("{other}"),
    }
}

/// Attempts every privilege on every table as every login and returns the differences from the
/// expected matrix.
async fn differences(db: &TestDatabase, call_notifications: bool) -> Vec<String> {
    let expected = expected();
    let tables: Vec<(String, String)> = sqlx::query_as(
        "SELECT c.relname::text, (SELECT a.attname::text FROM pg_attribute a
                            WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped
                            ORDER BY a.attnum LIMIT 1)
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p') ORDER BY 1",
    )
    .fetch_all(&db.pool)
    .await
    .expect("tables");
    let actual: BTreeSet<&str> = tables.iter().map(|(table, _)| table.as_str()).collect();
    let listed: BTreeSet<&str> = expected.keys().map(String::as_str).collect();
    assert_eq!(
        actual, listed,
        "every table, and only those, is in policies/privileges.md"
    );

    let columns = expected_columns();
    let mut differences = Vec::new();
    for (role, login) in ROLE_LOGINS {
        let mut connection = connect_as(db, role).await;
        for (table, column) in &tables {
            let cell = &expected[table][role];
            for (letter, privilege) in PRIVILEGES {
                let held = |letter: char| {
                    cell.always.contains(&letter)
                        || (call_notifications && cell.with_call_notifications.contains(&letter))
                };
                let on_columns = held(letter.to_ascii_lowercase());
                if on_columns {
                    // Granted on the listed columns only: the catalog says which, exactly.
                    let listed = columns
                        .get(&(table.clone(), (*role).to_owned(), privilege.to_owned()))
                        .cloned()
                        .unwrap_or_default();
                    assert!(!listed.is_empty(), "{table}/{role}/{privilege}: no columns listed");
                    let granted = columns_with(db, login, table, privilege).await;
                    if granted != listed {
                        differences.push(format!(
                            "{login} holds {privilege} on {table} columns {granted:?}, not {listed:?}"
                        ));
                    }
                    continue;
                }
                let want = held(letter);
                let got = permitted(&mut connection, &attempt(privilege, table, column)).await;
                if want != got {
                    differences.push(format!(
                        "{login} {} {privilege} on {table}",
                        if got { "holds" } else { "lacks" }
                    ));
                }
                // No column grant hides behind a cell that shows none.
                if !want && privilege != "DELETE" && !columns_with(db, login, table, privilege).await.is_empty() {
                    differences.push(format!("{login} holds {privilege} on some columns of {table}"));
                }
            }
            // Never granted to anyone: checked in the catalog rather than by attempting them.
            let other: bool = sqlx::query_scalar("SELECT has_table_privilege($1, $2, 'TRUNCATE, REFERENCES, TRIGGER')")
                .bind(login)
                .bind(table)
                .fetch_one(&db.pool)
                .await
                .expect("has_table_privilege");
            if other {
                differences.push(format!("{login} holds TRUNCATE, REFERENCES or TRIGGER on {table}"));
            }
        }
        connection.close().await.expect("disconnect");
    }
    differences
}

#[tokio::test]
async fn every_login_holds_exactly_the_expected_privileges() {
    let db = TestDatabase::new().await;
    let differences = differences(&db, false).await;
    assert!(
        differences.is_empty(),
        "privileges differ from policies/privileges.md:\n{}",
        differences.join("\n")
    );
}

#[tokio::test]
async fn call_notifications_add_only_their_grant_and_reapplying_is_idempotent() {
    let db = TestDatabase::new().await;
    let mut owner = connect_as(&db, "owner").await;
    for _ in 0..2 {
        policies::apply_grants(
            &mut owner,
            GrantOptions {
                call_notifications: true,
            },
        )
        .await
        .expect("apply grants with call notifications");
    }
    let differences_on = differences(&db, true).await;
    assert!(
        differences_on.is_empty(),
        "with call notifications:\n{}",
        differences_on.join("\n")
    );
    // Turning the flag off again takes the grant back.
    policies::apply_grants(&mut owner, GrantOptions::default())
        .await
        .expect("apply grants");
    let differences_off = differences(&db, false).await;
    assert!(
        differences_off.is_empty(),
        "after turning it off:\n{}",
        differences_off.join("\n")
    );
    // Logins can be re-provisioned at any time without error.
    let mut admin = PgConnection::connect(&db.url).await.expect("admin");
    policies::apply_logins(&mut admin).await.expect("logins again");
}

#[tokio::test]
async fn the_ingress_login_sees_and_writes_receipts_only() {
    let db = TestDatabase::new().await;
    const CALLS: i64 = 7;
    sqlx::query(
        "INSERT INTO call_records (kind, provider_call_id, direction, state)
         SELECT 'call', 'call-' || n, 'inbound', 'finished' FROM generate_series(1, $1) AS n
         UNION ALL SELECT 'receipt', 'receipt-' || n, NULL, NULL FROM generate_series(1, 2) AS n",
    )
    .bind(CALLS)
    .execute(&db.pool)
    .await
    .expect("seed");

    let ingress = pool_as(&db, "ingress").await;
    let visible: i64 = sqlx::query_scalar("SELECT count(*) FROM call_records")
        .fetch_one(&ingress)
        .await
        .expect("count");
    let non_receipts: i64 = sqlx::query_scalar("SELECT count(*) FROM call_records WHERE kind <> 'receipt'")
        .fetch_one(&ingress)
        .await
        .expect("count");
    assert_eq!((visible, non_receipts), (2, 0), "ingress sees 0 of {CALLS} call rows");

    let denied = sqlx::query(
        "INSERT INTO call_records (kind, provider_call_id, direction, state) VALUES ('call', 'forged', 'inbound', 'finished')",
    )
        .execute(&ingress)
        .await
        .expect_err("a non-receipt insert is refused");
    assert!(denied.to_string().contains("row-level security"), "{denied}");
    let denied = sqlx::query("UPDATE call_records SET kind = 'call' WHERE kind = 'receipt'")
        .execute(&ingress)
        .await
        .expect_err("turning a receipt into a call is refused");
    assert!(denied.to_string().contains("row-level security"), "{denied}");
    let touched = sqlx::query("UPDATE call_records SET deliveries = deliveries + 1 WHERE kind = 'call'")
        .execute(&ingress)
        .await
        .expect("update")
        .rows_affected();
    assert_eq!(touched, 0, "call rows are invisible to updates too");
    sqlx::query("INSERT INTO call_records (kind, provider_call_id) VALUES ('receipt', 'new-receipt')")
        .execute(&ingress)
        .await
        .expect("a receipt insert is allowed");

    let call = pool_as(&db, "call").await;
    let all: i64 = sqlx::query_scalar("SELECT count(*) FROM call_records")
        .fetch_one(&call)
        .await
        .expect("count");
    assert_eq!(all, CALLS + 3, "the call login sees every row");
    // The api, notify and worker logins see calls, never receipts; the worker records only
    // outbound calls.
    for login in ["api", "notify", "worker"] {
        let pool = pool_as(&db, login).await;
        let seen: Vec<String> = sqlx::query_scalar("SELECT kind FROM call_records")
            .fetch_all(&pool)
            .await
            .expect("kinds");
        assert_eq!(seen.len() as i64, CALLS, "{login}");
        assert!(seen.iter().all(|kind| kind == "call"), "{login}: {seen:?}");
    }
    let worker = pool_as(&db, "worker").await;
    let denied = sqlx::query(
        "INSERT INTO call_records (kind, provider_call_id, direction, state) VALUES ('call', 'forged-in', 'inbound', 'finished')",
    )
    .execute(&worker)
    .await
    .expect_err("the worker cannot record an inbound call");
    assert!(denied.to_string().contains("row-level security"), "{denied}");
    let api = pool_as(&db, "api").await;
    let denied = sqlx::query("UPDATE call_records SET kind = 'receipt' WHERE kind = 'call'")
        .execute(&api)
        .await
        .expect_err("the api cannot turn a call into a receipt");
    assert!(
        denied.to_string().contains("row-level security") || denied.to_string().contains("check constraint"),
        "{denied}"
    );
    let denied = sqlx::query("UPDATE call_records SET state = 'approved' WHERE kind = 'call'")
        .execute(&api)
        .await
        .expect_err("the api cannot re-arm a dial");
    assert!(denied.to_string().contains("row-level security"), "{denied}");
    let denied = sqlx::query(
        "INSERT INTO call_records (kind, direction, state, revision, brief, transcript)
         VALUES ('call', 'outbound', 'finished', repeat('a', 64), '{}', '[]')",
    )
    .execute(&worker)
    .await
    .expect_err("the worker cannot record a call's result");
    assert!(denied.to_string().contains("row-level security"), "{denied}");
    // Row security binds the table's owner too (forced), so only the policies' roles see rows.
    let mut owner = connect_as(&db, "owner").await;
    let owner_sees: i64 = sqlx::query_scalar("SELECT count(*) FROM call_records")
        .fetch_one(&mut owner)
        .await
        .expect("count");
    assert_eq!(owner_sees, 0);
}

#[tokio::test]
async fn the_catalog_shows_no_privileged_daemon_login() {
    let db = TestDatabase::new().await;
    let logins: Vec<&str> = ROLE_LOGINS.iter().map(|(_, login)| *login).collect();
    #[allow(clippy::type_complexity)]
    let attributes: Vec<(String, bool, bool, bool, bool, bool, bool, i64)> = sqlx::query_as(
        "SELECT r.rolname::text, r.rolcanlogin, r.rolsuper, r.rolbypassrls, r.rolcreatedb, r.rolcreaterole,
                r.rolinherit, (SELECT count(*) FROM pg_auth_members m WHERE m.member = r.oid)
         FROM pg_roles r WHERE r.rolname = ANY($1) ORDER BY 1",
    )
    .bind(&logins)
    .fetch_all(&db.pool)
    .await
    .expect("roles");
    assert_eq!(attributes.len(), logins.len(), "every login exists");
    for (login, can_login, superuser, bypass, create_db, create_role, inherit, memberships) in attributes {
        assert!(can_login, "{login} logs in");
        assert!(
            !superuser && !bypass && !create_db && !create_role,
            "{login} is not superuser and has no BYPASSRLS, CREATEDB or CREATEROLE"
        );
        assert!(!inherit && memberships == 0, "{login} inherits no membership");
    }
    let (owner_super, owner_bypass): (bool, bool) =
        sqlx::query_as("SELECT rolsuper, rolbypassrls FROM pg_roles WHERE rolname = $1")
            .bind(OWNER_LOGIN)
            .fetch_one(&db.pool)
            .await
            .expect("owner");
    assert!(
        !owner_super && !owner_bypass,
        "the migration owner is not privileged either"
    );

    let owned: Vec<(String, String)> = sqlx::query_as(
        "SELECT c.relname::text, pg_get_userbyid(c.relowner)::text FROM pg_class c
         JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = 'public' AND pg_get_userbyid(c.relowner) <> $1",
    )
    .bind(OWNER_LOGIN)
    .fetch_all(&db.pool)
    .await
    .expect("owners");
    assert!(owned.is_empty(), "only the migration owner owns relations: {owned:?}");
    let schema_or_database_owned: i64 = sqlx::query_scalar(
        "SELECT (SELECT count(*) FROM pg_namespace WHERE pg_get_userbyid(nspowner) = ANY($1))
              + (SELECT count(*) FROM pg_database WHERE pg_get_userbyid(datdba) = ANY($1))",
    )
    .bind(&logins)
    .fetch_one(&db.pool)
    .await
    .expect("schema owners");
    assert_eq!(
        schema_or_database_owned, 0,
        "no daemon login owns a schema or a database"
    );

    for login in &logins {
        let (create, temporary): (bool, bool) = sqlx::query_as(
            "SELECT has_schema_privilege($1, 'public', 'CREATE'), has_database_privilege($1, current_database(), 'TEMPORARY')",
        )
        .bind(login)
        .fetch_one(&db.pool)
        .await
        .expect("schema privileges");
        assert!(
            !create && !temporary,
            "{login} cannot create objects or temporary tables"
        );
    }

    // Row security: exactly the protected tables have it, enabled and forced.
    let protected: Vec<(String, bool, bool)> = sqlx::query_as(
        "SELECT c.relname::text, c.relrowsecurity, c.relforcerowsecurity FROM pg_class c
         JOIN pg_namespace n ON n.oid = c.relnamespace
         WHERE n.nspname = 'public' AND (c.relrowsecurity OR c.relforcerowsecurity OR
               EXISTS (SELECT 1 FROM pg_policy p WHERE p.polrelid = c.oid))
         ORDER BY 1",
    )
    .fetch_all(&db.pool)
    .await
    .expect("row security");
    assert_eq!(protected, [("call_records".to_owned(), true, true)]);
    let restrictive: Vec<(String, String, Vec<String>, String, String)> = sqlx::query_as(
        "SELECT policyname::text, cmd, roles::text[], COALESCE(qual, ''), COALESCE(with_check, '') FROM pg_policies
         WHERE tablename = 'call_records' AND permissive = 'RESTRICTIVE'",
    )
    .fetch_all(&db.pool)
    .await
    .expect("policies");
    let ingress_policy = restrictive
        .iter()
        .find(|policy| policy.0 == "call_records_ingress_receipts")
        .expect("the ingress policy");
    assert_eq!(
        ingress_policy,
        &(
            "call_records_ingress_receipts".to_owned(),
            "ALL".to_owned(),
            vec!["steward_ingress".to_owned()],
            "(kind = 'receipt'::text)".to_owned(),
            "(kind = 'receipt'::text)".to_owned()
        )
    );
    let mut names: Vec<&str> = restrictive.iter().map(|policy| policy.0.as_str()).collect();
    names.sort();
    assert_eq!(
        names,
        [
            "call_records_api_settles",
            "call_records_calls_only",
            "call_records_ingress_receipts",
            "call_records_worker_outbound"
        ]
    );
}

#[tokio::test]
async fn only_the_listed_logins_execute_each_function_and_none_runs_with_its_owners_rights() {
    let db = TestDatabase::new().await;
    let expected = expected_functions();
    let functions: Vec<(String, bool, bool)> = sqlx::query_as(
        "SELECT p.proname::text, p.prosecdef,
                -- No ACL at all is the default: PUBLIC may execute.
                p.proacl IS NULL OR EXISTS (SELECT 1 FROM aclexplode(p.proacl) a
                                            WHERE a.grantee = 0 AND a.privilege_type = 'EXECUTE')
         FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
         WHERE n.nspname = 'public' ORDER BY 1",
    )
    .fetch_all(&db.pool)
    .await
    .expect("functions");
    let actual: BTreeSet<&str> = functions.iter().map(|(name, _, _)| name.as_str()).collect();
    let listed: BTreeSet<&str> = expected.keys().map(String::as_str).collect();
    assert_eq!(
        actual, listed,
        "every function, and only those, is in policies/privileges.md"
    );
    let mut differences = Vec::new();
    for (function, security_definer, public) in &functions {
        if *security_definer {
            differences.push(format!("{function} runs with its owner's rights"));
        }
        if *public {
            differences.push(format!("PUBLIC may execute {function}"));
        }
        for (role, login) in ROLE_LOGINS {
            let held: bool = sqlx::query_scalar("SELECT has_function_privilege($1, $2::regproc, 'EXECUTE')")
                .bind(login)
                .bind(function)
                .fetch_one(&db.pool)
                .await
                .expect("has_function_privilege");
            if held != expected[function].contains(role) {
                differences.push(format!(
                    "{login} {} EXECUTE on {function}",
                    if held { "holds" } else { "lacks" }
                ));
            }
        }
    }
    assert!(
        differences.is_empty(),
        "function privileges differ from policies/privileges.md:\n{}",
        differences.join("\n")
    );
}

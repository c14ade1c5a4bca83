//! Test support: a real PostgreSQL server and a fresh, migrated database for every test.
//!
//! The server is `DATABASE_URL` when set (`cargo xtask test` starts one cluster for the whole
//! run and sets it); otherwise a private throwaway cluster is started once per test binary and
//! removed when the binary exits. Each test's database is copied from a template that holds the
//! current migrations, so a new database costs a file copy rather than a migration run.
//! [`callprov`] is a call provider speaking its HTTP API and signing its webhooks;
//! [`gmail`] is a mail provider on 127.0.0.1 speaking the Gmail wire format; [`roles`] checks
//! what every role binary refuses at start; [`demo`] fills a demo mailbox for trying Email mode
//! offline (the `steward-demo-mail` binary serves it); [`model`] is a model provider speaking the
//! Chat Completions streaming format; [`serve`] runs a test's HTTP stand-in on 127.0.0.1, and
//! `api` (feature `api`) the HTTP API itself; [`outage`] takes a test's database away and back; [`dns`] is a DNS server answering from a
//! test's records and [`dkim`] signs messages with a key made at run time; [`logs`] captures log lines; `tls` (feature `tls`) makes a certificate for
//! `localhost` from an authority made at run time, and `shop` (feature `tls`) serves the hosted
//! browser's tea shop behind it.

#[cfg(feature = "api")]
pub mod api;
pub mod callprov;
pub mod demo;
pub mod dkim;
pub mod dns;
pub mod gmail;
pub mod logs;
pub mod model;
pub mod outage;
pub mod roles;
pub mod serve;
#[cfg(feature = "tls")]
pub mod shop;
#[cfg(feature = "tls")]
pub mod tls;

pub use serve::{Served, serve, serve_with};

/// Writes `contents` to a new file at `path` that only its owner may read (mode 0600).
pub fn write_private(path: &std::path::Path, contents: &str) {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .expect("create an owner-only file");
    file.write_all(contents.as_bytes()).expect("write an owner-only file");
}

use std::sync::OnceLock;

use pgcluster::{Binaries, Cluster};
use sha2::{Digest, Sha256};
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};
use sqlx::{Connection, Executor, PgConnection, PgPool};
use store::policies::{self, GrantOptions};

struct Server {
    admin_url: String,
    _cluster: Option<Cluster>,
}

fn server() -> &'static Server {
    static SERVER: OnceLock<Server> = OnceLock::new();
    SERVER.get_or_init(|| match std::env::var("DATABASE_URL") {
        Ok(url) if !url.is_empty() => Server {
            admin_url: url,
            _cluster: None,
        },
        _ => {
            let binaries = Binaries::locate().unwrap_or_else(|error| panic!("{error}; run `cargo xtask test`"));
            let cluster = Cluster::temporary(&binaries).unwrap_or_else(|error| panic!("{error}"));
            Server {
                admin_url: cluster.url("postgres"),
                _cluster: Some(cluster),
            }
        }
    })
}

/// `url` with its database name replaced by `database`.
pub fn with_database(url: &str, database: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(base, query)| (base, Some(query)));
    let authority_end = base.find("://").map_or(0, |i| i + 3);
    let base = match base[authority_end..].find('/') {
        Some(slash) => &base[..authority_end + slash],
        None => base,
    };
    match query {
        Some(query) => format!("{base}/{database}?{query}"),
        None => format!("{base}/{database}"),
    }
}

/// The template's name changes whenever the migrations or the policies do.
fn template_name() -> String {
    let mut hasher = Sha256::new();
    for migration in store::MIGRATOR.iter() {
        hasher.update(migration.version.to_be_bytes());
        hasher.update(&migration.checksum);
    }
    hasher.update(policies::LOGINS_SQL);
    hasher.update(policies::GRANTS_SQL);
    let digest = hasher.finalize();
    format!(
        "steward_template_{}",
        digest[..6].iter().map(|b| format!("{b:02x}")).collect::<String>()
    )
}

async fn ensure_template(admin: &mut PgConnection, template: &str) {
    // Test binaries run in parallel; one builds the template while the others wait.
    admin
        .execute("SELECT pg_advisory_lock(72410001)")
        .await
        .expect("take the template lock");
    let exists: bool = sqlx::query_scalar("SELECT EXISTS (SELECT 1 FROM pg_database WHERE datname = $1)")
        .bind(template)
        .fetch_one(&mut *admin)
        .await
        .expect("look up the template");
    if !exists {
        // As in production: the logins exist cluster-wide, the migration owner owns the
        // database and runs the migrations, then applies the grants.
        policies::apply_logins(admin).await.expect("apply policies/logins.sql");
        admin
            .execute(format!("CREATE DATABASE {template} OWNER {}", policies::OWNER_LOGIN).as_str())
            .await
            .expect("create the template");
        let url = pgcluster::with_user(&with_database(&server().admin_url, template), policies::OWNER_LOGIN);
        let mut connection = PgConnection::connect(&url).await.expect("connect to the template");
        let migrated = match store::MIGRATOR.run(&mut connection).await {
            Ok(()) => policies::apply_grants(&mut connection, GrantOptions::default())
                .await
                .map_err(|error| error.to_string()),
            Err(error) => Err(error.to_string()),
        };
        let _ = connection.close().await;
        if let Err(error) = migrated {
            admin
                .execute(format!("DROP DATABASE {template}").as_str())
                .await
                .expect("drop the broken template");
            panic!("migrations or grants failed: {error}");
        }
    }
    admin
        .execute("SELECT pg_advisory_unlock(72410001)")
        .await
        .expect("release the template lock");
}

/// A fresh database holding the current migrations and grants, dropped when this value is
/// dropped. `pool` and `url` connect as a superuser (for setting up and checking rows); a role
/// under test connects with its own login through [`TestDatabase::url_as`] or
/// [`TestDatabase::store_as`], so its privileges are exercised as in production.
#[derive(Debug)]
pub struct TestDatabase {
    pub pool: PgPool,
    pub url: String,
    name: String,
}

impl TestDatabase {
    /// The URL of this database for `role`'s login (`api`, `worker`, `schedule`, ...), or for
    /// the migration owner with `owner`.
    pub fn url_as(&self, role: &str) -> String {
        let login = match role {
            "owner" => policies::OWNER_LOGIN,
            _ => policies::login(role).unwrap_or_else(|| panic!("`{role}` is not a role")),
        };
        pgcluster::with_user(&self.url, login)
    }

    /// A store connected with `role`'s login.
    /// A listener on the channels that announce committed work ([`store::EVENTS_CHANNEL`],
    /// [`store::RUNS_CHANNEL`]), to show what was, or was not, announced.
    pub async fn wake_guard(&self) -> sqlx::postgres::PgListener {
        let mut guard = sqlx::postgres::PgListener::connect_with(&self.pool)
            .await
            .expect("listen");
        guard
            .listen_all([store::EVENTS_CHANNEL, store::RUNS_CHANNEL])
            .await
            .expect("listen");
        guard
    }

    /// Applies the grants again as a deployment with `AGENT_CALL_NOTIFICATIONS_ENABLED=1` does
    /// (the call login may then enqueue notifications).
    pub async fn grant_call_notifications(&self) {
        let mut owner = PgConnection::connect(&pgcluster::with_user(&self.url, policies::OWNER_LOGIN))
            .await
            .expect("connect as the migration owner");
        policies::apply_grants(
            &mut owner,
            GrantOptions {
                call_notifications: true,
            },
        )
        .await
        .expect("apply the grants");
        let _ = owner.close().await;
    }

    pub async fn store_as(&self, role: &str) -> store::Store {
        let options: PgConnectOptions = self.url_as(role).parse().expect("role url");
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .connect_with(options)
            .await
            .unwrap_or_else(|error| panic!("connect as {role}: {error}"));
        store::Store::from_pool(pool)
    }

    pub async fn new() -> TestDatabase {
        let admin_url = &server().admin_url;
        let template = template_name();
        let mut admin = PgConnection::connect(admin_url)
            .await
            .expect("connect to the test server");
        ensure_template(&mut admin, &template).await;
        let name = format!("steward_test_{}", uuid::Uuid::new_v4().simple());
        admin
            .execute(
                format!(
                    "CREATE DATABASE {name} TEMPLATE {template} OWNER {}",
                    policies::OWNER_LOGIN
                )
                .as_str(),
            )
            .await
            .expect("create the test database");
        let _ = admin.close().await;
        let url = with_database(admin_url, &name);
        // A database's own privileges (TEMPORARY) are not copied from its template: the grants
        // are applied again, as a deployment applies them to its database.
        let mut owner = PgConnection::connect(&pgcluster::with_user(&url, policies::OWNER_LOGIN))
            .await
            .expect("connect as the migration owner");
        policies::apply_grants(&mut owner, GrantOptions::default())
            .await
            .expect("apply the grants");
        let _ = owner.close().await;
        let options: PgConnectOptions = url.parse().expect("test database url");
        let pool = PgPoolOptions::new()
            .max_connections(8)
            .connect_with(options)
            .await
            .expect("connect to the test database");
        TestDatabase { pool, url, name }
    }
}

impl Drop for TestDatabase {
    fn drop(&mut self) {
        let admin_url = server().admin_url.clone();
        let name = self.name.clone();
        // Drop runs inside the test's runtime; the cleanup gets its own thread and runtime.
        let cleanup = std::thread::spawn(move || {
            let runtime = tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
                .ok()?;
            runtime.block_on(async move {
                let mut admin = PgConnection::connect(&admin_url).await.ok()?;
                admin
                    .execute(format!("DROP DATABASE IF EXISTS {name} WITH (FORCE)").as_str())
                    .await
                    .ok()?;
                admin.close().await.ok()
            })
        });
        let _ = cleanup.join();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_database_name_and_keeps_the_query() {
        assert_eq!(
            with_database("postgres://postgres@localhost:5432/postgres?host=/tmp/x/run", "t1"),
            "postgres://postgres@localhost:5432/t1?host=/tmp/x/run"
        );
        assert_eq!(
            with_database("postgres://u:p@db:5432", "t2"),
            "postgres://u:p@db:5432/t2"
        );
        assert_eq!(with_database("postgres://u@db/app", "t3"), "postgres://u@db/t3");
    }

    #[tokio::test]
    async fn fresh_databases_are_migrated_and_isolated() {
        let first = TestDatabase::new().await;
        let second = TestDatabase::new().await;
        assert_ne!(first.url, second.url);
        let current = store::Store::from_pool(first.pool.clone())
            .migrations_current()
            .await
            .expect("query");
        assert!(current, "a fresh database holds every migration");
        sqlx::query("INSERT INTO folders (id, principal_id, name) VALUES (gen_random_uuid(), 'owner', 'x')")
            .execute(&first.pool)
            .await
            .expect("insert");
        let count: i64 = sqlx::query_scalar("SELECT count(*) FROM folders")
            .fetch_one(&second.pool)
            .await
            .expect("count");
        assert_eq!(count, 0, "databases do not share rows");
    }
}

/// A clock that follows the host's but can be moved forward, for a [`store::Store`] whose run
/// timing and push delays a test jumps over (`Store::with_clock`).
#[derive(Debug, Default)]
pub struct ShiftedClock {
    offset: std::sync::Mutex<jiff::SignedDuration>,
}

impl ShiftedClock {
    /// Moves the clock forward by `by`.
    pub fn advance(&self, by: jiff::SignedDuration) {
        let mut offset = self.offset.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *offset += by;
    }
}

impl store::Clock for ShiftedClock {
    fn now(&self) -> jiff::Timestamp {
        let offset = *self.offset.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        jiff::Timestamp::now() + offset
    }
}

/// Asserts that `guard` (a [`TestDatabase::wake_guard`]) hears nothing for a moment.
pub async fn assert_no_wake_up(guard: &mut sqlx::postgres::PgListener) {
    let heard = tokio::time::timeout(std::time::Duration::from_millis(300), guard.recv()).await;
    assert!(heard.is_err(), "no wake-up was sent: {heard:?}");
}

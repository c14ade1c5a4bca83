//! Applies the schema migrations and the role privileges, or provisions the logins and the
//! database.
//!
//! | Usage | `DATABASE_URL` names | Does |
//! |---|---|---|
//! | `steward-migrate` | the database, as the migration owner login (`steward_owner`) | applies pending migrations, then `policies/grants.sql` (every role's privileges and row security) in one transaction |
//! | `steward-migrate provision` | the database, as an administrator (superuser or CREATEROLE and CREATEDB) | applies `policies/logins.sql` (cluster-wide), creates the database owned by `steward_owner` when missing, and hands an existing schema to that owner |
//!
//! `AGENT_CALL_NOTIFICATIONS_ENABLED=1` grants the call login what enqueuing call notifications
//! needs. The daemon roles never hold migration rights.

use std::process::ExitCode;

use anyhow::Context;
use domain::env::{Env, EnvError};
use sqlx::postgres::PgConnectOptions;
use sqlx::{ConnectOptions, Connection, Executor};
use store::policies::{self, GrantOptions, OWNER_LOGIN};

#[derive(Clone, Copy, PartialEq, Eq)]
enum Action {
    Migrate,
    Provision,
}

struct Config {
    action: Action,
    database: PgConnectOptions,
    grants: GrantOptions,
}

#[derive(Debug, thiserror::Error)]
enum ConfigError {
    #[error("unexpected argument `{0}` (usage: steward-migrate [provision])")]
    Usage(String),
    #[error("{0}")]
    Env(#[from] EnvError),
}

impl Config {
    fn from_env(
        arguments: impl Iterator<Item = String>,
        lookup: impl Fn(&str) -> Option<String>,
    ) -> Result<Config, ConfigError> {
        let mut action = Action::Migrate;
        for argument in arguments {
            match argument.as_str() {
                "provision" if action == Action::Migrate => action = Action::Provision,
                _ => return Err(ConfigError::Usage(argument)),
            }
        }
        let env = Env::new(&lookup);
        Ok(Config {
            action,
            database: store::Database::url_from_env(&env)?,
            grants: GrantOptions {
                call_notifications: env.switch("AGENT_CALL_NOTIFICATIONS_ENABLED")?,
            },
        })
    }
}

fn main() -> ExitCode {
    let config = match role::prepare("steward-migrate", role::RoleKind::Application, || {
        Config::from_env(std::env::args().skip(1), role::environment)
    }) {
        Ok(config) => config,
        Err(code) => return code,
    };
    let result = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("start the async runtime")
        .and_then(|runtime| {
            runtime.block_on(async {
                match config.action {
                    Action::Migrate => migrate(&config).await,
                    Action::Provision => provision(&config).await,
                }
            })
        });
    match result {
        Ok(report) => {
            println!("steward-migrate: {report}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("steward-migrate: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn migrate(config: &Config) -> anyhow::Result<String> {
    let mut connection = config
        .database
        .connect()
        .await
        .context("connect to the database as the migration owner")?;
    store::MIGRATOR.run(&mut connection).await.context("apply migrations")?;
    policies::apply_grants(&mut connection, config.grants)
        .await
        .context("apply policies/grants.sql")?;
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations WHERE success")
        .fetch_one(&mut connection)
        .await
        .context("count applied migrations")?;
    connection.close().await.context("disconnect")?;
    Ok(format!(
        "schema current ({applied} migrations applied in total), role privileges applied"
    ))
}

async fn provision(config: &Config) -> anyhow::Result<String> {
    let name = config
        .database
        .get_database()
        .context("DATABASE_URL names no database")?
        .to_owned();
    let mut admin = config
        .database
        .clone()
        .database("postgres")
        .connect()
        .await
        .context("connect to the `postgres` database as an administrator")?;
    policies::apply_logins(&mut admin)
        .await
        .context("apply policies/logins.sql")?;
    let owner: Option<String> =
        sqlx::query_scalar("SELECT pg_get_userbyid(datdba)::text FROM pg_database WHERE datname = $1")
            .bind(&name)
            .fetch_optional(&mut admin)
            .await
            .context("look up the database")?;
    let created = match owner.as_deref() {
        None => {
            admin
                .execute(format!("CREATE DATABASE {} OWNER {OWNER_LOGIN}", quote(&name)).as_str())
                .await
                .context("create the database")?;
            true
        }
        Some(OWNER_LOGIN) => false,
        Some(_) => {
            admin
                .execute(format!("ALTER DATABASE {} OWNER TO {OWNER_LOGIN}", quote(&name)).as_str())
                .await
                .context("hand the database to the migration owner")?;
            false
        }
    };
    admin.close().await.context("disconnect")?;
    // A schema made before the owner login existed is handed to it, so migrations can go on.
    let mut database = config.database.connect().await.context("connect to the database")?;
    sqlx::raw_sql(ADOPT_SCHEMA)
        .execute(&mut database)
        .await
        .context("hand the schema's tables to the migration owner")?;
    database.close().await.context("disconnect")?;
    Ok(if created {
        format!("logins provisioned; database `{name}` created, owned by {OWNER_LOGIN}")
    } else {
        format!("logins provisioned; database `{name}` is owned by {OWNER_LOGIN}")
    })
}

/// Gives every table in `public` that another role owns to the migration owner.
const ADOPT_SCHEMA: &str = r"
DO $adopt$
DECLARE relation record;
BEGIN
    FOR relation IN
        SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = 'public' AND c.relkind IN ('r', 'p')
          AND pg_get_userbyid(c.relowner) <> 'steward_owner'
    LOOP
        EXECUTE format('ALTER TABLE public.%I OWNER TO steward_owner', relation.relname);
    END LOOP;
END
$adopt$;
";

/// An SQL identifier, quoted.
fn quote(identifier: &str) -> String {
    format!("\"{}\"", identifier.replace('"', "\"\""))
}

//! Applies the schema migrations. Runs as the migration owner login (`DATABASE_URL`); the daemon
//! roles never hold migration rights.
//!
//! Usage: `steward-migrate [--create-database]`. With `--create-database` the database named by
//! the URL is created first when it does not exist (dev stacks; production creates it by hand).

use std::process::ExitCode;

use anyhow::Context;
use sqlx::migrate::MigrateDatabase;

fn main() -> ExitCode {
    let mut create = false;
    for argument in std::env::args().skip(1) {
        match argument.as_str() {
            "--create-database" => create = true,
            other => {
                eprintln!("steward-migrate: unknown argument `{other}` (usage: steward-migrate [--create-database])");
                return ExitCode::from(2);
            }
        }
    }
    let Some(url) = std::env::var("DATABASE_URL").ok().filter(|url| !url.is_empty()) else {
        eprintln!("steward-migrate: DATABASE_URL is required");
        return ExitCode::from(2);
    };
    let result = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("start the async runtime")
        .and_then(|runtime| runtime.block_on(migrate(&url, create)));
    match result {
        Ok(applied) => {
            println!("steward-migrate: schema current ({applied} migrations applied in total)");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("steward-migrate: {error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn migrate(url: &str, create: bool) -> anyhow::Result<usize> {
    if create
        && !sqlx::Postgres::database_exists(url)
            .await
            .context("check whether the database exists")?
    {
        sqlx::Postgres::create_database(url)
            .await
            .context("create the database")?;
    }
    let pool = sqlx::PgPool::connect(url).await.context("connect to the database")?;
    store::MIGRATOR.run(&pool).await.context("apply migrations")?;
    let applied: i64 = sqlx::query_scalar("SELECT count(*) FROM _sqlx_migrations WHERE success")
        .fetch_one(&pool)
        .await
        .context("count applied migrations")?;
    pool.close().await;
    Ok(usize::try_from(applied).unwrap_or_default())
}

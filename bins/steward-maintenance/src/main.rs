//! The maintenance role: expires what has outlived its use, in bounded passes, until SIGTERM or
//! SIGINT. Every pass runs each task of `store::retention` once (at most
//! `MAINTENANCE_BATCH` records each), logs one line per task that removed something (its name
//! and count, never content), and goes on at once while a task filled its batch.
//!
//! | Variable | Meaning | Default |
//! |---|---|---|
//! | `DATABASE_URL` | PostgreSQL URL of the maintenance login | required |
//! | `ARTIFACT_RETENTION_DAYS` | an artifact's bytes are removed this long after its upload (its metadata stays; its content answers 410 `artifact_expired`) | `90` |
//! | `IDEMPOTENCY_RETENTION_DAYS` | an `Idempotency-Key` is remembered this long: a retry within it replays the first answer | `7` |
//! | `FOLDER_PROPOSAL_RETENTION_DAYS` | an accepted folder proposal is kept this long (a declined one stays: it stops the same proposal coming back) | `30` |
//! | `NOTIFICATION_RETENTION_DAYS` | an acknowledged or obsolete notification is kept this long | `30` |
//! | `EMAIL_OPERATION_RETENTION_DAYS` | a settled email operation is kept this long | `30` |
//! | `MAINTENANCE_INTERVAL_SECONDS` | the pause between passes | `300` |
//! | `MAINTENANCE_BATCH` | the most records one task removes in one pass | `1000` |
//! | `LOG_LEVEL` | as for the other roles | `info` |
//!
//! Expired web sessions are removed at their expiry and call transcripts and summaries 30 days
//! after the call ended (the spec's call retention): neither has a variable.

use std::process::ExitCode;
use std::time::Duration;

use domain::env::{Env, EnvError, FromEnv};
use jiff::SignedDuration;
use store::retention::{Retention, Task};

struct Config {
    database: store::Database,
    retention: Retention,
    interval: Duration,
    batch: u32,
}

/// At most ten years: a longer window is a typo, not a policy.
const MAX_DAYS: u32 = 3650;

fn days(env: &Env, name: &'static str, default: SignedDuration) -> Result<SignedDuration, EnvError> {
    let default_days = u32::try_from(default.as_hours() / 24).unwrap_or(1);
    let days = env.positive(name, default_days)?;
    if days > MAX_DAYS {
        return Err(domain::env::invalid(name, format!("must be at most {MAX_DAYS} days")));
    }
    Ok(SignedDuration::from_hours(i64::from(days) * 24))
}

impl FromEnv for Config {
    type Error = EnvError;

    fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, EnvError> {
        let env = Env::new(&lookup);
        let defaults = Retention::default();
        Ok(Config {
            database: store::Database::from_env(&env, 2)?,
            retention: Retention {
                artifacts: days(&env, "ARTIFACT_RETENTION_DAYS", defaults.artifacts)?,
                idempotency: days(&env, "IDEMPOTENCY_RETENTION_DAYS", defaults.idempotency)?,
                folder_proposals: days(&env, "FOLDER_PROPOSAL_RETENTION_DAYS", defaults.folder_proposals)?,
                notifications: days(&env, "NOTIFICATION_RETENTION_DAYS", defaults.notifications)?,
                email_operations: days(&env, "EMAIL_OPERATION_RETENTION_DAYS", defaults.email_operations)?,
            },
            interval: Duration::from_secs(u64::from(env.positive("MAINTENANCE_INTERVAL_SECONDS", 300)?)),
            batch: env.positive("MAINTENANCE_BATCH", 1000)?,
        })
    }
}

fn main() -> ExitCode {
    role::main("steward-maintenance", role::RoleKind::Application, maintain)
}

/// Runs every task once; true when one of them filled its batch (more may be waiting).
async fn pass(store: &store::Store, config: &Config) -> bool {
    let now = jiff::Timestamp::now();
    let mut full = false;
    for task in Task::ALL {
        match store.expire(task, &config.retention, now, config.batch).await {
            Ok(0) => {}
            Ok(removed) => {
                tracing::info!(task = task.name(), removed, "expired");
                full |= removed >= u64::from(config.batch);
            }
            Err(error) => tracing::warn!(task = task.name(), %error, "a retention task failed; the others ran"),
        }
    }
    full
}

async fn maintain(config: Config) -> anyhow::Result<()> {
    let store = config.database.connect_lazy();
    let shutdown = role::shutdown_signal();
    tokio::pin!(shutdown);
    tracing::info!("steward-maintenance started");
    role::ready();
    loop {
        let pause = if pass(&store, &config).await {
            Duration::ZERO
        } else {
            config.interval
        };
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = &mut shutdown => return Ok(()),
        }
    }
}

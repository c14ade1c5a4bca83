//! PostgreSQL storage: the migrator, the connection pool and one repository module per resource.
//!
//! Every statement here is exercised by a test against a real PostgreSQL server.

mod approvals;
mod artifacts;
mod call_receipts;
mod delivery;
mod events;
mod folders;
mod idempotency;
mod mail;
mod model_settings;
mod notes;
mod notifications;
pub mod policies;
mod runs;
mod schedules;
mod scheduling;
mod sessions;
mod work;

pub use approvals::{Answer, ApprovalRow, Decide, Decision};
pub use artifacts::{ArtifactRow, ArtifactUpload, NewArtifact};
pub use call_receipts::{CALL_RECEIPTS_CHANNEL, Receipt};
pub use delivery::{DeviceTarget, DueNotification};
pub use events::{EVENTS_CHANNEL, EventRow, TRANSIENT_CHANNEL};
pub use folders::{FolderRow, RenameFolder};
pub use idempotency::{IdempotencyClaim, Prior, StoredResponse};
pub use mail::{DueReconciliation, NewReconciliation, Reconciled};
pub use notifications::{DeviceRow, NotificationRow};
pub use runs::{CancelRun, NewMessage, RunRow, Submit};
pub use schedules::{CancelSchedule, CreateSchedule, NewSchedule, OccurrenceRow, ScheduleRow};
pub use scheduling::{AUTHORIZATION_FAILED, Firing, INVALID_CADENCE, MISFIRE};
pub use sessions::{DeleteSession, FileSession, NewSession, SessionPage, SessionRow};
pub use work::{ClaimedRun, InvocationRow, Lease, ModelStep, NewCall, RUNS_CHANNEL, RunCounters};

use sqlx::PgPool;
use sqlx::migrate::Migrator;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

/// The schema migrations, embedded at compile time from `migrations/`.
pub static MIGRATOR: Migrator = sqlx::migrate!("../../migrations");

/// Errors that are not an expected outcome of an operation.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database error: {0}")]
    Database(#[from] sqlx::Error),
    #[error("stored data is inconsistent: {0}")]
    Corrupt(String),
}

pub type Result<T, E = StoreError> = std::result::Result<T, E>;

/// A handle on the database, cheap to clone.
#[derive(Clone, Debug)]
pub struct Store {
    pool: PgPool,
}

impl Store {
    /// Connects lazily: the pool opens connections on first use, so a role can start (and report
    /// not-ready) while the database is still coming up.
    pub fn connect_lazy(url: &str, max_connections: u32) -> Result<Store> {
        let options: PgConnectOptions = url.parse()?;
        let pool = PgPoolOptions::new()
            .max_connections(max_connections)
            .acquire_timeout(std::time::Duration::from_secs(5))
            .connect_lazy_with(options);
        Ok(Store { pool })
    }

    pub fn from_pool(pool: PgPool) -> Store {
        Store { pool }
    }

    pub fn pool(&self) -> &PgPool {
        &self.pool
    }

    /// Whether the database answers and holds exactly the migrations this build knows, all
    /// applied successfully with matching checksums.
    pub async fn migrations_current(&self) -> Result<bool> {
        let applied: Vec<(i64, bool, Vec<u8>)> =
            match sqlx::query_as("SELECT version, success, checksum FROM _sqlx_migrations ORDER BY version")
                .fetch_all(&self.pool)
                .await
            {
                Ok(rows) => rows,
                // No migration table at all: reachable, but never migrated.
                Err(sqlx::Error::Database(error)) if error.code().as_deref() == Some("42P01") => return Ok(false),
                Err(error) => return Err(error.into()),
            };
        let known: Vec<_> = MIGRATOR.iter().filter(|m| m.migration_type.is_up_migration()).collect();
        Ok(applied.len() == known.len()
            && applied
                .iter()
                .zip(&known)
                .all(|((version, success, checksum), migration)| {
                    *success && *version == migration.version && checksum.as_slice() == migration.checksum.as_ref()
                }))
    }
}

impl Store {
    /// Runs `work` in a transaction, committing when `commit_if` approves its outcome and rolling
    /// back explicitly otherwise (also on error). A merely dropped transaction only queues its
    /// rollback for when the connection is next used, so its locks would outlive the request.
    ///
    /// Lock order, kept by every caller so transactions never deadlock: a run, then its
    /// approvals, questions and invocations, then its session (which every event append locks).
    async fn transaction<T>(
        &self,
        work: impl AsyncFnOnce(&mut sqlx::PgConnection) -> Result<T>,
        commit_if: impl FnOnce(&T) -> bool,
    ) -> Result<T> {
        let mut tx = self.pool.begin().await?;
        match work(&mut tx).await {
            Ok(outcome) if commit_if(&outcome) => {
                tx.commit().await?;
                Ok(outcome)
            }
            Ok(outcome) => {
                tx.rollback().await?;
                Ok(outcome)
            }
            Err(error) => {
                let _ = tx.rollback().await;
                Err(error)
            }
        }
    }
}

fn timestamp(value: jiff_sqlx::Timestamp) -> jiff::Timestamp {
    value.to_jiff()
}

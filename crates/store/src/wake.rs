//! Wake-ups for workers: a `NOTIFY` on [`RUNS_CHANNEL`] when a run becomes claimable. A hint
//! only: workers also poll, so a lost wake-up costs latency, never a run.

use domain::ids::RunId;
use sqlx::PgConnection;

use crate::Result;

/// The notification channel that wakes workers; the payload is the run id.
pub const RUNS_CHANNEL: &str = "steward_runs";

/// Wakes the workers for `run` when the caller's transaction commits.
pub(crate) async fn notify_run(conn: &mut PgConnection, run: RunId) -> Result<()> {
    sqlx::query("SELECT pg_notify($1, $2)")
        .bind(RUNS_CHANNEL)
        .bind(run.to_string())
        .execute(&mut *conn)
        .await?;
    Ok(())
}

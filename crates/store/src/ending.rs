//! The one way a run ends. Completing, failing, cancelling on request and expiring (reason
//! `deadline`) all go through [`end_run`], in the caller's transaction, which already holds the
//! run's lock (lock order: the run first): the terminal state and reason, the run's open
//! approvals and questions closed, its unsettled invocations cancelled and their pushes made
//! obsolete, its schedule occurrence settled, and the terminal event appended.

use domain::approval::ApprovalStatus;
use domain::ids::{RunId, SessionId};
use domain::run::RunState;
use sqlx::PgConnection;
use wire::event::{CancelReason, Event, RunCancelled, RunCompleted, RunFailed, RunUsage};

use crate::events::append;
use crate::{Result, StoreError};

/// How a run ends.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Ending {
    Completed(RunUsage),
    Failed {
        code: String,
        detail: String,
        usage: RunUsage,
    },
    Cancelled(CancelReason),
}

impl Ending {
    fn state(&self) -> RunState {
        match self {
            Ending::Completed(_) => RunState::Completed,
            Ending::Failed { .. } => RunState::Failed,
            Ending::Cancelled(_) => RunState::Cancelled,
        }
    }

    /// The stored `outcome_reason`: a failure's code, a cancellation's reason.
    fn reason(&self) -> Option<&str> {
        match self {
            Ending::Completed(_) => None,
            Ending::Failed { code, .. } => Some(code),
            Ending::Cancelled(CancelReason::Requested) => Some("requested"),
            Ending::Cancelled(CancelReason::Deadline) => Some("deadline"),
            Ending::Cancelled(CancelReason::DraftChanged) => Some("draft_changed"),
        }
    }

    /// What the run's pending approvals and questions become: a run that ran out of time lets
    /// them expire; any other ending cancels them.
    fn open_items(&self) -> ApprovalStatus {
        match self {
            Ending::Cancelled(CancelReason::Deadline) => ApprovalStatus::Expired,
            _ => ApprovalStatus::Cancelled,
        }
    }

    fn event(self, run: RunId) -> Event {
        let run_id = run.as_uuid();
        let state = self.state();
        match self {
            Ending::Completed(usage) => Event::RunCompleted(RunCompleted { run_id, state, usage }),
            Ending::Failed { code, detail, usage } => Event::RunFailed(RunFailed {
                run_id,
                state,
                code,
                detail,
                usage,
            }),
            Ending::Cancelled(reason) => Event::RunCancelled(RunCancelled { run_id, state, reason }),
        }
    }
}

/// Ends `run` of `session`, which the caller has locked and found active, at `now` by the store's
/// clock (a scheduled run's outcome alert leaves no earlier than the push delay after it).
pub(crate) async fn end_run(
    conn: &mut PgConnection,
    run: RunId,
    session: SessionId,
    ending: Ending,
    now: jiff_sqlx::Timestamp,
) -> Result<()> {
    let state = ending.state();
    let ended = sqlx::query(
        "UPDATE runs SET state = $2, outcome_reason = $3, finished_at = now(), updated_at = now(),
             lease_owner = NULL, lease_expires_at = NULL, working_since = NULL
         WHERE id = $1 AND state IN ('queued', 'running', 'waiting_approval', 'waiting_input')",
    )
    .bind(run.as_uuid())
    .bind(state.as_str())
    .bind(ending.reason())
    .execute(&mut *conn)
    .await?;
    if ended.rows_affected() != 1 {
        return Err(StoreError::Corrupt(format!("run {run} was ended while not active")));
    }
    close_open_items(conn, run, ending.open_items()).await?;
    crate::scheduling::settle_occurrence(conn, run, state, ending.reason(), now).await?;
    append(conn, session, Some(run), &ending.event(run)).await?;
    Ok(())
}

/// Closes a run's open items: pending approvals and questions get `status`, unsettled
/// invocations are cancelled, their notifications become obsolete.
async fn close_open_items(conn: &mut PgConnection, run: RunId, status: ApprovalStatus) -> Result<()> {
    sqlx::query("UPDATE approvals SET status = $2, decided_at = now() WHERE run_id = $1 AND status = 'PENDING'")
        .bind(run.as_uuid())
        .bind(status.as_str())
        .execute(&mut *conn)
        .await?;
    sqlx::query("UPDATE questions SET status = $2 WHERE run_id = $1 AND status = 'PENDING'")
        .bind(run.as_uuid())
        .bind(status.as_str())
        .execute(&mut *conn)
        .await?;
    sqlx::query(
        "UPDATE tool_invocations SET state = 'cancelled', updated_at = now()
         WHERE run_id = $1 AND state IN ('queued', 'awaiting_approval', 'awaiting_answer', 'approved')",
    )
    .bind(run.as_uuid())
    .execute(&mut *conn)
    .await?;
    sqlx::query("UPDATE notification_outbox SET obsolete_at = now() WHERE run_id = $1 AND obsolete_at IS NULL")
        .bind(run.as_uuid())
        .execute(&mut *conn)
        .await?;
    Ok(())
}

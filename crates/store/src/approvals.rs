//! The owner's side of parked runs: pending approvals, decisions (the first stored resolution
//! wins) and answers to questions. A decision or answer re-queues the run for any worker.

use domain::approval::{ApprovalStatus, InvocationState, Risk};
use domain::browser::TaskOffer;
use domain::ids::{PrincipalId, RunId, SessionId};
use jiff::Timestamp;
use serde_json::{Value, json};
use sqlx::postgres::PgRow;
use sqlx::{FromRow, PgConnection};
use uuid::Uuid;
use wire::browser::ApprovedFor;
use wire::event::{ApprovalResolved, CancelReason, Event, QuestionAnswered};

use crate::ending::{Ending, end_run};
use crate::events::append;
use crate::invocations::{invocation, write_result};
use crate::wake::{Hint, hint};
use crate::{Result, Store, parsed, timestamp};

#[derive(Clone, Debug, PartialEq)]
pub struct ApprovalRow {
    pub id: Uuid,
    pub run_id: RunId,
    pub session_id: SessionId,
    pub invocation_id: Uuid,
    pub tool: String,
    pub risk: Risk,
    pub arguments: Value,
    pub argument_digests: Value,
    pub status: ApprovalStatus,
    /// A browser action's offer of a task permission.
    pub task_offer: Option<TaskOffer>,
    /// How it was approved (once, or for the task).
    pub approved_for: Option<ApprovedFor>,
    pub task_permission_id: Option<Uuid>,
    pub decided_at: Option<Timestamp>,
    pub created_at: Timestamp,
}

const APPROVAL_COLUMNS: &str = "a.id, a.run_id, a.session_id, a.invocation_id, a.tool, a.risk, a.arguments,
    a.argument_digests, a.status, a.task_offer, a.approved_for, a.task_permission_id, a.decided_at, a.created_at";

/// An `approvals` row as stored.
#[derive(sqlx::FromRow)]
struct ApprovalRecord {
    id: Uuid,
    run_id: Uuid,
    session_id: Uuid,
    invocation_id: Uuid,
    tool: String,
    risk: String,
    arguments: Value,
    argument_digests: Value,
    status: String,
    task_offer: Option<Value>,
    approved_for: Option<String>,
    task_permission_id: Option<Uuid>,
    decided_at: Option<jiff_sqlx::Timestamp>,
    created_at: jiff_sqlx::Timestamp,
}

impl ApprovalRow {
    fn from_row(row: &PgRow) -> Result<ApprovalRow> {
        let record = ApprovalRecord::from_row(row)?;
        Ok(ApprovalRow {
            id: record.id,
            run_id: RunId::from_uuid(record.run_id),
            session_id: SessionId::from_uuid(record.session_id),
            invocation_id: record.invocation_id,
            tool: record.tool,
            risk: parsed("approval risk", &record.risk, Risk::parse)?,
            arguments: record.arguments,
            argument_digests: record.argument_digests,
            status: parsed("approval status", &record.status, ApprovalStatus::parse)?,
            task_offer: record
                .task_offer
                .map(|offer| {
                    serde_json::from_value(offer)
                        .map_err(|error| crate::StoreError::Corrupt(format!("an approval's task offer: {error}")))
                })
                .transpose()?,
            approved_for: record
                .approved_for
                .as_deref()
                .map(|text| parsed("approval approved_for", text, ApprovedFor::parse))
                .transpose()?,
            task_permission_id: record.task_permission_id,
            decided_at: record.decided_at.map(timestamp),
            created_at: timestamp(record.created_at),
        })
    }
}

/// The owner's decision on an approval.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decision {
    ApproveOnce,
    Deny,
    /// Approve and grant the task permission the approval offers.
    AllowForTask,
}

#[derive(Debug, PartialEq)]
pub enum Decide {
    Decided(Box<ApprovalRow>),
    /// Another resolution was stored first; nothing changed.
    AlreadyResolved(Box<ApprovalRow>),
    /// The run's deadline had passed: the run was cancelled and the approval is `EXPIRED`.
    Expired(Box<ApprovalRow>),
    /// `AllowForTask` on an approval offering no task permission; nothing changed.
    NotOffered,
    NotFound,
}

#[derive(Debug, PartialEq)]
pub enum Answer {
    Answered,
    RunNotFound,
    /// The run is not waiting for this question (wrong id, stale, or already answered).
    NotPending,
    /// The run's deadline had passed: it was cancelled and the question expired.
    Expired,
}

/// Locks a run of `principal` (lock order: the run first); returns its session and whether it is
/// active with its deadline passed at `now`, or `None` when there is no such run.
async fn lock_run(
    conn: &mut PgConnection,
    principal: &PrincipalId,
    run: RunId,
    now: jiff_sqlx::Timestamp,
) -> Result<Option<(SessionId, bool)>> {
    let row: Option<(Uuid, bool)> = sqlx::query_as(
        "SELECT session_id, deadline_at <= $3 AND state IN ('queued', 'running', 'waiting_approval', 'waiting_input')
         FROM runs WHERE id = $1 AND principal_id = $2 FOR UPDATE",
    )
    .bind(run.as_uuid())
    .bind(principal.as_str())
    .bind(now)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(row.map(|(session, overdue)| (SessionId::from_uuid(session), overdue)))
}

/// Re-queues a parked run once nothing is left for the owner to decide: from `now` it counts
/// working time again, and its deadline is what is left of its timeout.
async fn requeue_if_settled(conn: &mut PgConnection, run: RunId, now: jiff_sqlx::Timestamp) -> Result<()> {
    let requeued = sqlx::query(
        "UPDATE runs SET state = 'queued', updated_at = now(), working_since = $2,
             deadline_at = $2 + greatest(make_interval(secs => run_timeout_seconds) - worked, interval '0')
         WHERE id = $1 AND state IN ('waiting_approval', 'waiting_input')
           AND NOT EXISTS (SELECT 1 FROM approvals WHERE run_id = $1 AND status = 'PENDING')
           AND NOT EXISTS (SELECT 1 FROM questions WHERE run_id = $1 AND status = 'PENDING')",
    )
    .bind(run.as_uuid())
    .bind(now)
    .execute(&mut *conn)
    .await?;
    if requeued.rows_affected() == 1 {
        hint(Hint::Run);
    }
    Ok(())
}

impl Store {
    /// Pending approvals of a session, oldest first.
    pub async fn pending_approvals(&self, principal: &PrincipalId, session: SessionId) -> Result<Vec<ApprovalRow>> {
        let sql = format!(
            "SELECT {APPROVAL_COLUMNS} FROM approvals a JOIN sessions s ON s.id = a.session_id
             WHERE a.session_id = $1 AND s.principal_id = $2 AND a.status = 'PENDING' ORDER BY a.created_at, a.id"
        );
        let rows = sqlx::query(&sql)
            .bind(session.as_uuid())
            .bind(principal.as_str())
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(ApprovalRow::from_row).collect()
    }

    pub async fn approval(&self, principal: &PrincipalId, id: Uuid) -> Result<Option<ApprovalRow>> {
        let sql = format!(
            "SELECT {APPROVAL_COLUMNS} FROM approvals a JOIN sessions s ON s.id = a.session_id
             WHERE a.id = $1 AND s.principal_id = $2"
        );
        let row = sqlx::query(&sql)
            .bind(id)
            .bind(principal.as_str())
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(ApprovalRow::from_row).transpose()
    }

    /// Stores the owner's decision unless another resolution was stored first.
    pub async fn decide_approval(&self, principal: &PrincipalId, id: Uuid, decision: Decision) -> Result<Decide> {
        let now = self.now_sql();
        self.transaction(
            async |tx: &mut PgConnection| {
                // The run is locked before the approval, in the same order cancel and the
                // deadline sweep take them.
                let run: Option<Uuid> = sqlx::query_scalar(
                    "SELECT a.run_id FROM approvals a JOIN sessions s ON s.id = a.session_id
                     WHERE a.id = $1 AND s.principal_id = $2",
                )
                .bind(id)
                .bind(principal.as_str())
                .fetch_optional(&mut *tx)
                .await?;
                let Some(run) = run.map(RunId::from_uuid) else {
                    return Ok(Decide::NotFound);
                };
                let Some((session, overdue)) = lock_run(tx, principal, run, now).await? else {
                    return Ok(Decide::NotFound);
                };
                let sql = format!(
                    "SELECT {APPROVAL_COLUMNS} FROM approvals a JOIN sessions s ON s.id = a.session_id
                     WHERE a.id = $1 AND s.principal_id = $2 FOR UPDATE OF a"
                );
                if overdue {
                    // Past the deadline: the run expires now (committed), whatever the sweep's timing.
                    end_run(tx, run, session, Ending::Cancelled(CancelReason::Deadline), now).await?;
                    let row = sqlx::query(&sql)
                        .bind(id)
                        .bind(principal.as_str())
                        .fetch_one(&mut *tx)
                        .await?;
                    return Ok(Decide::Expired(Box::new(ApprovalRow::from_row(&row)?)));
                }
                let found = sqlx::query(&sql)
                    .bind(id)
                    .bind(principal.as_str())
                    .fetch_optional(&mut *tx)
                    .await?;
                let Some(row) = found else { return Ok(Decide::NotFound) };
                let approval = ApprovalRow::from_row(&row)?;
                if approval.status != ApprovalStatus::Pending {
                    return Ok(Decide::AlreadyResolved(Box::new(approval)));
                }
                let (status, invocation_state, approved_for) = match decision {
                    Decision::ApproveOnce => (
                        ApprovalStatus::Approved,
                        InvocationState::Approved,
                        Some(ApprovedFor::Once),
                    ),
                    Decision::AllowForTask => (
                        ApprovalStatus::Approved,
                        InvocationState::Approved,
                        Some(ApprovedFor::Task),
                    ),
                    Decision::Deny => (ApprovalStatus::Denied, InvocationState::Denied, None),
                };
                let permission = match (decision, &approval.task_offer) {
                    (Decision::AllowForTask, None) => return Ok(Decide::NotOffered),
                    (Decision::AllowForTask, Some(offer)) => {
                        match crate::browser::grant_task_permission(tx, principal, &approval, offer, now).await? {
                            Some(permission) => Some(permission),
                            None => return Ok(Decide::NotOffered),
                        }
                    }
                    _ => None,
                };
                let sql = format!(
                    "UPDATE approvals a SET status = $2, decided_at = now(), approved_for = $3, task_permission_id = $4
                     WHERE a.id = $1 RETURNING {APPROVAL_COLUMNS}"
                );
                let decided = sqlx::query(&sql)
                    .bind(id)
                    .bind(status.as_str())
                    .bind(approved_for.map(ApprovedFor::as_str))
                    .bind(permission)
                    .fetch_one(&mut *tx)
                    .await?;
                let decided = ApprovalRow::from_row(&decided)?;
                sqlx::query(
                    "UPDATE tool_invocations SET state = $2, updated_at = now() WHERE id = $1 AND state =
                     'awaiting_approval'",
                )
                .bind(approval.invocation_id)
                .bind(invocation_state.as_str())
                .execute(&mut *tx)
                .await?;
                sqlx::query(
                    "UPDATE notification_outbox SET obsolete_at = now() WHERE approval_id = $1 AND
                             obsolete_at IS NULL",
                )
                .bind(id)
                .execute(&mut *tx)
                .await?;
                let event = Event::ApprovalResolved(ApprovalResolved {
                    run_id: approval.run_id.as_uuid(),
                    approval_id: id,
                    invocation_id: approval.invocation_id,
                    tool: approval.tool.clone(),
                    status,
                    approved_for,
                    task_permission_id: permission,
                });
                append(tx, approval.session_id, Some(approval.run_id), &event).await?;
                if decision == Decision::Deny {
                    // The model is told at once; the tool never runs.
                    let invocation = invocation(tx, approval.invocation_id).await?;
                    let result = json!({ "message": "The owner denied this action; it was not performed." });
                    write_result(
                        tx,
                        approval.session_id,
                        &invocation,
                        InvocationState::Denied,
                        &result,
                        Some("approval.denied"),
                    )
                    .await?;
                }
                requeue_if_settled(tx, approval.run_id, now).await?;
                Ok(Decide::Decided(Box::new(decided)))
            },
            |outcome| matches!(outcome, Decide::Decided(_) | Decide::Expired(_)),
        )
        .await
    }

    /// Answers the run's pending question `question`.
    pub async fn answer_question(
        &self,
        principal: &PrincipalId,
        run: RunId,
        question: Uuid,
        text: &str,
    ) -> Result<Answer> {
        let now = self.now_sql();
        self.transaction(
            async |tx: &mut PgConnection| {
                let Some((session, overdue)) = lock_run(tx, principal, run, now).await? else {
                    return Ok(Answer::RunNotFound);
                };
                if overdue {
                    // Past the deadline: the run expires now (committed), whatever the sweep's timing.
                    end_run(tx, run, session, Ending::Cancelled(CancelReason::Deadline), now).await?;
                    return Ok(Answer::Expired);
                }
                let invocation: Option<Uuid> = sqlx::query_scalar(
                    "UPDATE questions SET status = 'ANSWERED', answer = $3, answered_at = now()
                     WHERE id = $1 AND run_id = $2 AND status = 'PENDING' RETURNING invocation_id",
                )
                .bind(question)
                .bind(run.as_uuid())
                .bind(text)
                .fetch_optional(&mut *tx)
                .await?;
                let Some(invocation) = invocation else {
                    return Ok(Answer::NotPending);
                };
                sqlx::query(
                    "UPDATE notification_outbox SET obsolete_at = now() WHERE question_id = $1 AND obsolete_at IS NULL",
                )
                .bind(question)
                .execute(&mut *tx)
                .await?;
                let event = Event::QuestionAnswered(QuestionAnswered {
                    run_id: run.as_uuid(),
                    question_id: question,
                    answer: text.to_owned(),
                });
                append(tx, session, Some(run), &event).await?;
                let invocation = self::invocation(tx, invocation).await?;
                write_result(
                    tx,
                    session,
                    &invocation,
                    InvocationState::Succeeded,
                    &json!({ "answer": text }),
                    None,
                )
                .await?;
                requeue_if_settled(tx, run, now).await?;
                Ok(Answer::Answered)
            },
            |outcome| matches!(outcome, Answer::Answered | Answer::Expired),
        )
        .await
    }
}

//! Call records (`call_records`, `kind = 'call'`): the owner's reads and decisions here, the
//! worker's outbound reservation (`reserve`), and the call worker's settling, dispatch journal
//! and sweeps (`settle`). Receipts (`kind = 'receipt'`) are the ingress listener's
//! (`call_receipts`).

mod redact;
mod reserve;
mod settle;

use domain::call::{CallDirection, CallFailure, CallState};
use domain::ids::PrincipalId;
use jiff::Timestamp;
use serde_json::Value;
use uuid::Uuid;

pub use redact::{REDACTED_REPLY, Redaction};
pub use reserve::Reserve;
pub use settle::{CallResult, DispatchOutcome, OutboundDue, ReceiptDue, RunningCall, Settled, UncertainCall};

use crate::{Result, Store, named, named_optional, timestamp};

/// A call as the owner sees it. The transcript and summary are gone once the record expired.
#[derive(Clone, Debug, PartialEq)]
pub struct CallRow {
    pub id: Uuid,
    pub direction: CallDirection,
    pub state: CallState,
    /// The other party's number.
    pub counterpart: Option<String>,
    /// Outbound: the approved brief, word for word, and the revision it is pinned to.
    pub brief: Option<Value>,
    pub revision: Option<String>,
    pub session_id: Option<Uuid>,
    /// Turns of `{user, text}`.
    pub transcript: Option<Value>,
    pub summary: Option<String>,
    pub answered_by: Option<String>,
    pub duration_seconds: Option<i32>,
    pub failure: Option<CallFailure>,
    pub created_at: Timestamp,
    pub dispatched_at: Option<Timestamp>,
    pub finished_at: Option<Timestamp>,
    pub expired_at: Option<Timestamp>,
}

#[derive(sqlx::FromRow)]
struct CallRecord {
    id: Uuid,
    direction: String,
    state: String,
    counterpart: Option<String>,
    brief: Option<Value>,
    revision: Option<String>,
    session_id: Option<Uuid>,
    transcript: Option<Value>,
    summary: Option<String>,
    answered_by: Option<String>,
    duration_seconds: Option<i32>,
    failure: Option<String>,
    received_at: jiff_sqlx::Timestamp,
    dispatched_at: Option<jiff_sqlx::Timestamp>,
    finished_at: Option<jiff_sqlx::Timestamp>,
    expired_at: Option<jiff_sqlx::Timestamp>,
}

const COLUMNS: &str = "id, direction, state, counterpart, brief, revision, session_id, transcript, summary,
     answered_by, duration_seconds, failure, received_at, dispatched_at, finished_at, expired_at";

impl CallRecord {
    fn into_row(self) -> Result<CallRow> {
        Ok(CallRow {
            id: self.id,
            direction: named(self.direction)?,
            state: named(self.state)?,
            counterpart: self.counterpart,
            brief: self.brief,
            revision: self.revision,
            session_id: self.session_id,
            transcript: self.transcript,
            summary: self.summary,
            answered_by: self.answered_by,
            duration_seconds: self.duration_seconds,
            failure: named_optional(self.failure)?,
            created_at: timestamp(self.received_at),
            dispatched_at: self.dispatched_at.map(timestamp),
            finished_at: self.finished_at.map(timestamp),
            expired_at: self.expired_at.map(timestamp),
        })
    }
}

/// What cancelling an outbound call did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CancelCall {
    Cancelled,
    NotFound,
    /// It is past its approval: dispatching, dispatched, or over.
    TooLate(CallState),
}

/// What deleting a call did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DeleteCall {
    /// Its transcript and summary are gone and it is hidden; what was derived from it is
    /// redacted by the call worker.
    Deleted,
    NotFound,
    /// The call is still in progress, or a run that used it has not ended.
    Active,
}

impl Store {
    /// The owner's calls, newest first, after the keyset position `after` (created, id).
    pub async fn list_calls(
        &self,
        principal: &PrincipalId,
        after: Option<(Timestamp, Uuid)>,
        limit: i64,
    ) -> Result<Vec<CallRow>> {
        let (after_at, after_id) = after.map_or((None, None), |(at, id)| {
            (Some(jiff_sqlx::Timestamp::from(at)), Some(id))
        });
        let records: Vec<CallRecord> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM call_records
             WHERE kind = 'call' AND principal_id = $1 AND deleted_at IS NULL
               AND ($2::timestamptz IS NULL OR (received_at, id) < ($2, $3))
             ORDER BY received_at DESC, id DESC LIMIT $4"
        ))
        .bind(principal.as_str())
        .bind(after_at)
        .bind(after_id)
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        records.into_iter().map(CallRecord::into_row).collect()
    }

    /// One of the owner's calls, unless deleted.
    pub async fn call(&self, principal: &PrincipalId, id: Uuid) -> Result<Option<CallRow>> {
        let record: Option<CallRecord> = sqlx::query_as(&format!(
            "SELECT {COLUMNS} FROM call_records
             WHERE kind = 'call' AND id = $1 AND principal_id = $2 AND deleted_at IS NULL"
        ))
        .bind(id)
        .bind(principal.as_str())
        .fetch_optional(&self.pool)
        .await?;
        record.map(CallRecord::into_row).transpose()
    }

    /// Cancels an approved outbound call the call worker has not started dispatching; its
    /// reservation is released.
    pub async fn cancel_call(&self, principal: &PrincipalId, id: Uuid) -> Result<CancelCall> {
        let found: Option<(String, bool)> = sqlx::query_as(
            "WITH target AS (
                 SELECT id, state FROM call_records
                 WHERE kind = 'call' AND id = $1 AND principal_id = $2 AND deleted_at IS NULL FOR UPDATE
             ), cancelled AS (
                 UPDATE call_records c SET state = 'cancelled', finished_at = now(), updated_at = now()
                 FROM target WHERE c.id = target.id AND target.state = 'approved'
                 RETURNING c.id
             )
             SELECT target.state, EXISTS (SELECT 1 FROM cancelled) FROM target",
        )
        .bind(id)
        .bind(principal.as_str())
        .fetch_optional(&self.pool)
        .await?;
        match found {
            None => Ok(CancelCall::NotFound),
            Some((_, true)) => Ok(CancelCall::Cancelled),
            Some((state, false)) => Ok(CancelCall::TooLate(named(state)?)),
        }
    }

    /// Deletes a call: refused while it is in progress, while a run is active in a conversation
    /// it entered (its own, or one where a call tool's result named it), or while a call tool
    /// of an active run has not settled. The transcript, summary and
    /// brief go at once; the record stays hidden so the call worker can redact what was derived
    /// from it.
    pub async fn delete_call(&self, principal: &PrincipalId, id: Uuid) -> Result<DeleteCall> {
        self.transaction(
            async |conn| {
                let state: Option<String> = sqlx::query_scalar(
                    "SELECT state FROM call_records
                     WHERE kind = 'call' AND id = $1 AND principal_id = $2 AND deleted_at IS NULL FOR UPDATE",
                )
                .bind(id)
                .bind(principal.as_str())
                .fetch_optional(&mut *conn)
                .await?;
                let Some(state) = state else {
                    return Ok(DeleteCall::NotFound);
                };
                let state: CallState = named(state)?;
                if state.reserves() {
                    return Ok(DeleteCall::Active);
                }
                let active_run: bool = sqlx::query_scalar(
                    "SELECT EXISTS (
                         SELECT 1 FROM runs r
                         WHERE r.state IN ('queued', 'running', 'waiting_approval', 'waiting_input')
                           AND (r.session_id = (SELECT session_id FROM call_records WHERE id = $1)
                                -- A conversation the call entered (by a call tool's result, in
                                -- any of its runs) is using it while a run of it is active.
                                OR EXISTS (SELECT 1 FROM tool_invocations t
                                           WHERE t.session_id = r.session_id AND t.tool LIKE 'calls.%'
                                             AND (strpos(t.arguments::text, $1::text) > 0
                                                  OR strpos(t.result::text, $1::text) > 0))
                                -- A call tool of the run not yet settled may be reading it now.
                                OR EXISTS (SELECT 1 FROM tool_invocations t
                                           WHERE t.run_id = r.id AND t.tool LIKE 'calls.%' AND t.result IS NULL)))",
                )
                .bind(id)
                .fetch_one(&mut *conn)
                .await?;
                if active_run {
                    return Ok(DeleteCall::Active);
                }
                sqlx::query(
                    "UPDATE call_records SET deleted_at = now(), transcript = NULL, summary = NULL, brief = NULL,
                            counterpart = NULL, updated_at = now()
                     WHERE id = $1",
                )
                .bind(id)
                .execute(&mut *conn)
                .await?;
                Ok(DeleteCall::Deleted)
            },
            |outcome| *outcome == DeleteCall::Deleted,
        )
        .await
    }
}

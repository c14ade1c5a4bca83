//! Reconciliations of mail writes and sends of unknown outcome. The row is written in the
//! transaction that records the `outcome_unknown` result (with a `mail.outcome_unknown` event),
//! claimed by workers with `SKIP LOCKED` for each read-only search, and settled once with a
//! `mail.reconciled` event. Nothing here ever re-dispatches the action.

use domain::ids::{RunId, SessionId};
use serde_json::json;
use sqlx::{PgConnection, Row};
use uuid::Uuid;

use crate::events::append;
use crate::work::InvocationRow;
use crate::{Result, Store};

/// What a mail write or send of unknown outcome leaves to reconcile (no message content).
#[derive(Clone, Copy, Debug)]
pub struct NewReconciliation<'a> {
    pub account_id: &'a str,
    /// `create_draft` or `send_message`.
    pub operation: &'a str,
    /// The `Message-ID` header (without angle brackets) of the message that may exist.
    pub message_id: &'a str,
}

/// A reconciliation claimed for one search attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DueReconciliation {
    pub invocation_id: Uuid,
    pub session_id: SessionId,
    pub run_id: RunId,
    pub account_id: String,
    pub operation: String,
    pub message_id: String,
    /// Attempts so far, this one included.
    pub attempts: u32,
}

/// How a reconciliation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reconciled<'a> {
    /// The message exists (in Drafts or Sent), in this thread.
    Found { thread_id: &'a str },
    /// The searches ran out without finding it; that proves nothing either way.
    NotFound,
}

/// Records the reconciliation of `invocation` and announces `mail.outcome_unknown`.
pub(crate) async fn open(
    conn: &mut PgConnection,
    session: SessionId,
    invocation: &InvocationRow,
    new: &NewReconciliation<'_>,
) -> Result<()> {
    let inserted = sqlx::query(
        "INSERT INTO mail_reconciliations (invocation_id, session_id, run_id, account_id, operation, message_id)
         VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (invocation_id) DO NOTHING",
    )
    .bind(invocation.id)
    .bind(session.as_uuid())
    .bind(invocation.run_id.as_uuid())
    .bind(new.account_id)
    .bind(new.operation)
    .bind(new.message_id)
    .execute(&mut *conn)
    .await?;
    if inserted.rows_affected() == 1 {
        let payload = json!({
            "run_id": invocation.run_id.to_string(), "invocation_id": invocation.id.to_string(),
            "call_id": invocation.call_id, "tool": invocation.tool, "account_id": new.account_id,
            "operation": new.operation, "code": "mail.outcome_unknown",
        });
        append(conn, session, Some(invocation.run_id), "mail.outcome_unknown", &payload).await?;
    }
    Ok(())
}

impl Store {
    /// Claims up to `limit` pending reconciliations that are due, pushing each one's next
    /// attempt `spacing_seconds` × its attempts into the future (so a worker that dies mid-search
    /// only delays it).
    pub async fn claim_due_reconciliations(&self, limit: u32, spacing_seconds: u32) -> Result<Vec<DueReconciliation>> {
        let rows = sqlx::query(
            "UPDATE mail_reconciliations m
             SET attempts = m.attempts + 1,
                 next_attempt_at = now() + make_interval(secs => $2 * (m.attempts + 1))
             WHERE m.invocation_id IN (
                 SELECT invocation_id FROM mail_reconciliations
                 WHERE state = 'pending' AND next_attempt_at <= now()
                 ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED)
             RETURNING m.invocation_id, m.session_id, m.run_id, m.account_id, m.operation, m.message_id, m.attempts",
        )
        .bind(i64::from(limit))
        .bind(f64::from(spacing_seconds))
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(DueReconciliation {
                    invocation_id: row.try_get("invocation_id")?,
                    session_id: SessionId::from_uuid(row.try_get("session_id")?),
                    run_id: RunId::from_uuid(row.try_get("run_id")?),
                    account_id: row.try_get("account_id")?,
                    operation: row.try_get("operation")?,
                    message_id: row.try_get("message_id")?,
                    attempts: u32::try_from(row.try_get::<i32, _>("attempts")?).unwrap_or(0),
                })
            })
            .collect()
    }

    /// Settles a pending reconciliation once and announces `mail.reconciled`; false when it was
    /// already settled.
    pub async fn settle_reconciliation(&self, due: &DueReconciliation, outcome: Reconciled<'_>) -> Result<bool> {
        let (state, thread_id) = match outcome {
            Reconciled::Found { thread_id } => ("found", Some(thread_id)),
            Reconciled::NotFound => ("not_found", None),
        };
        self.transaction(
            async |tx: &mut PgConnection| {
                let settled = sqlx::query(
                    "UPDATE mail_reconciliations SET state = $2, thread_id = $3, settled_at = now()
                     WHERE invocation_id = $1 AND state = 'pending'
                     RETURNING (SELECT call_id FROM tool_invocations WHERE id = $1) AS call_id,
                               (SELECT tool FROM tool_invocations WHERE id = $1) AS tool",
                )
                .bind(due.invocation_id)
                .bind(state)
                .bind(thread_id)
                .fetch_optional(&mut *tx)
                .await?;
                let Some(row) = settled else {
                    return Ok(false);
                };
                let payload = json!({
                    "run_id": due.run_id.to_string(), "invocation_id": due.invocation_id.to_string(),
                    "call_id": row.try_get::<Option<String>, _>("call_id")?,
                    "tool": row.try_get::<Option<String>, _>("tool")?,
                    "account_id": due.account_id, "operation": due.operation, "state": state,
                    "thread_id": thread_id,
                });
                append(tx, due.session_id, Some(due.run_id), "mail.reconciled", &payload).await?;
                Ok(true)
            },
            |settled| *settled,
        )
        .await
    }
}

//! Reconciliations of mail writes and sends of unknown outcome. The row is armed
//! (`dispatching`) in the transaction that marks the invocation dispatching, so the search key
//! survives a crash or a worker without mail; it becomes `pending` in the transaction that
//! records the `outcome_unknown` result (with a `mail.outcome_unknown` event) or `settled` when
//! the outcome is known. Pending rows are claimed by workers with `SKIP LOCKED` for each
//! read-only search, and settled once with a `mail.reconciled` event. Nothing here ever
//! re-dispatches the action.

use domain::ids::{RunId, SessionId};
use sqlx::{FromRow, PgConnection};
use uuid::Uuid;
use wire::event::{Event, MailOutcomeUnknown, MailReconciled, ReconciliationOutcome};

use crate::events::append;
use crate::invocations::InvocationRow;
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

/// The code of a mail write or send of unknown outcome.
pub const OUTCOME_UNKNOWN: &str = "mail.outcome_unknown";

/// A reconciliation claimed for one search attempt.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DueReconciliation {
    pub invocation_id: Uuid,
    pub session_id: SessionId,
    pub run_id: RunId,
    pub account_id: String,
    pub operation: String,
    pub message_id: String,
    /// When the request left, in Unix seconds.
    pub dispatched_at: i64,
    /// Attempts so far, this one included (whether or not the provider answered them); they
    /// space the next one.
    pub attempts: u32,
}

/// A claimed reconciliation as stored.
#[derive(sqlx::FromRow)]
struct DueRecord {
    invocation_id: Uuid,
    session_id: Uuid,
    run_id: Uuid,
    account_id: String,
    operation: String,
    message_id: String,
    dispatched_at: i64,
    attempts: i32,
}

/// How a reconciliation ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reconciled<'a> {
    /// The message exists (in Drafts or Sent), in this thread.
    Found { thread_id: &'a str },
    /// The searches ran out without finding it; that proves nothing either way.
    NotFound,
}

/// Inserts the reconciliation of `invocation` in `state` unless it has one; true when inserted.
async fn insert(
    conn: &mut PgConnection,
    session: SessionId,
    invocation: &InvocationRow,
    new: &NewReconciliation<'_>,
    state: &str,
) -> Result<bool> {
    let inserted = sqlx::query(
        "INSERT INTO mail_reconciliations (invocation_id, session_id, run_id, account_id, operation, message_id, state)
         VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (invocation_id) DO NOTHING",
    )
    .bind(invocation.id)
    .bind(session.as_uuid())
    .bind(invocation.run_id.as_uuid())
    .bind(new.account_id)
    .bind(new.operation)
    .bind(new.message_id)
    .bind(state)
    .execute(&mut *conn)
    .await?;
    Ok(inserted.rows_affected() == 1)
}

/// Arms the reconciliation of a mail write or send about to be dispatched.
pub(crate) async fn arm(
    conn: &mut PgConnection,
    session: SessionId,
    invocation: &InvocationRow,
    new: &NewReconciliation<'_>,
) -> Result<()> {
    insert(conn, session, invocation, new, "dispatching").await?;
    Ok(())
}

/// Whether `invocation` dispatched a mail write or send (its reconciliation is armed).
pub(crate) async fn armed(conn: &mut PgConnection, invocation: Uuid) -> Result<bool> {
    Ok(sqlx::query_scalar(
        "SELECT EXISTS (SELECT 1 FROM mail_reconciliations WHERE invocation_id = $1 AND state = 'dispatching')",
    )
    .bind(invocation)
    .fetch_one(&mut *conn)
    .await?)
}

/// The outcome of `invocation` is known: its armed reconciliation has nothing to search for.
pub(crate) async fn disarm(conn: &mut PgConnection, invocation: Uuid) -> Result<()> {
    sqlx::query(
        "UPDATE mail_reconciliations SET state = 'settled', settled_at = now()
         WHERE invocation_id = $1 AND state = 'dispatching'",
    )
    .bind(invocation)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// The outcome of `invocation` is unknown: its reconciliation becomes due (the armed one, or
/// `new` for a dispatch that armed none) and `mail.outcome_unknown` is announced. False when
/// there is nothing to reconcile.
pub(crate) async fn open(
    conn: &mut PgConnection,
    session: SessionId,
    invocation: &InvocationRow,
    new: Option<&NewReconciliation<'_>>,
) -> Result<bool> {
    let opened: Option<(String, String)> = sqlx::query_as(
        "UPDATE mail_reconciliations SET state = 'pending', next_attempt_at = now()
         WHERE invocation_id = $1 AND state = 'dispatching' RETURNING account_id, operation",
    )
    .bind(invocation.id)
    .fetch_optional(&mut *conn)
    .await?;
    let (account_id, operation): (String, String) = match (opened, new) {
        (Some(opened), _) => opened,
        (None, Some(new)) => {
            if !insert(conn, session, invocation, new, "pending").await? {
                return Ok(false);
            }
            (new.account_id.to_owned(), new.operation.to_owned())
        }
        (None, None) => return Ok(false),
    };
    let event = Event::MailOutcomeUnknown(MailOutcomeUnknown {
        run_id: invocation.run_id.as_uuid(),
        invocation_id: invocation.id,
        call_id: invocation.call_id.clone(),
        tool: invocation.tool.clone(),
        account_id,
        operation,
        code: OUTCOME_UNKNOWN.to_owned(),
    });
    append(conn, session, Some(invocation.run_id), &event).await?;
    Ok(true)
}

impl Store {
    /// Claims up to `limit` pending reconciliations of the `accounts` this worker can search
    /// that are due, pushing each one's next attempt `spacing_seconds` × its attempts into the
    /// future (so a worker that dies mid-search only delays it). Another account's wait for a
    /// worker that has it.
    pub async fn claim_due_reconciliations(
        &self,
        limit: u32,
        spacing_seconds: u32,
        accounts: &[String],
    ) -> Result<Vec<DueReconciliation>> {
        let rows = sqlx::query(
            "UPDATE mail_reconciliations m
             SET attempts = m.attempts + 1,
                 next_attempt_at = now() + make_interval(secs => $2 * (m.attempts + 1))
             WHERE m.invocation_id IN (
                 SELECT invocation_id FROM mail_reconciliations
                 WHERE state = 'pending' AND next_attempt_at <= now() AND account_id = ANY($3)
                 ORDER BY next_attempt_at LIMIT $1 FOR UPDATE SKIP LOCKED)
             RETURNING m.invocation_id, m.session_id, m.run_id, m.account_id, m.operation, m.message_id, m.attempts,
                       extract(epoch FROM m.dispatched_at)::bigint AS dispatched_at",
        )
        .bind(i64::from(limit))
        .bind(f64::from(spacing_seconds))
        .bind(accounts)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                let record = DueRecord::from_row(row)?;
                Ok(DueReconciliation {
                    invocation_id: record.invocation_id,
                    session_id: SessionId::from_uuid(record.session_id),
                    run_id: RunId::from_uuid(record.run_id),
                    account_id: record.account_id,
                    operation: record.operation,
                    message_id: record.message_id,
                    dispatched_at: record.dispatched_at,
                    attempts: u32::try_from(record.attempts).unwrap_or(0),
                })
            })
            .collect()
    }

    /// Whether `session` has a write or send to `account_id` of `operation` whose outcome is
    /// not known yet (dispatching, or pending its reconciliation).
    pub async fn mail_outcome_open(&self, session: SessionId, account_id: &str, operation: &str) -> Result<bool> {
        Ok(sqlx::query_scalar(
            "SELECT EXISTS (SELECT 1 FROM mail_reconciliations
                            WHERE session_id = $1 AND account_id = $2 AND operation = $3
                              AND state IN ('dispatching', 'pending'))",
        )
        .bind(session.as_uuid())
        .bind(account_id)
        .bind(operation)
        .fetch_one(&self.pool)
        .await?)
    }

    /// Counts a search of `due` that completed; returns how many have.
    pub async fn record_search(&self, due: &DueReconciliation) -> Result<u32> {
        let searches: Option<i32> = sqlx::query_scalar(
            "UPDATE mail_reconciliations SET searches = searches + 1
             WHERE invocation_id = $1 AND state = 'pending' RETURNING searches",
        )
        .bind(due.invocation_id)
        .fetch_optional(&self.pool)
        .await?;
        Ok(searches.and_then(|n| u32::try_from(n).ok()).unwrap_or(0))
    }

    /// Settles a pending reconciliation once and announces `mail.reconciled`; false when it was
    /// already settled.
    pub async fn settle_reconciliation(&self, due: &DueReconciliation, outcome: Reconciled<'_>) -> Result<bool> {
        let (outcome, thread_id) = match outcome {
            Reconciled::Found { thread_id } => (ReconciliationOutcome::Found, Some(thread_id)),
            Reconciled::NotFound => (ReconciliationOutcome::NotFound, None),
        };
        let state = outcome.as_str();
        self.transaction(
            async |tx: &mut PgConnection| {
                let settled: Option<(Option<String>, Option<String>)> = sqlx::query_as(
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
                let Some((call_id, tool)) = settled else {
                    return Ok(false);
                };
                let event = Event::MailReconciled(MailReconciled {
                    run_id: due.run_id.as_uuid(),
                    invocation_id: due.invocation_id,
                    call_id,
                    tool,
                    account_id: due.account_id.clone(),
                    operation: due.operation.clone(),
                    state: outcome,
                    thread_id: thread_id.map(str::to_owned),
                });
                append(tx, due.session_id, Some(due.run_id), &event).await?;
                Ok(true)
            },
            |settled| *settled,
        )
        .await
    }
}

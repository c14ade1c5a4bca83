//! Email mode's durable operations (migration 0017): refreshes, which the async worker runs, and
//! provider writes (archive, move back to the Inbox, report spam, Not spam), which the worker
//! runs with the write document.
//!
//! A write is claimed `queued`, marked `dispatching` in its own committed statement before the
//! request leaves, and settled `succeeded` or `failed` from the provider's answer. An answer
//! that proves nothing (a timeout, a reset, a 5xx), or a claim that expired while dispatching
//! (the worker died), leaves it `uncertain`; an uncertain write is settled only by reading the
//! thread's labels (`reconciled_at`), never by sending it again.

use std::time::Duration;

use jiff::Timestamp;
use uuid::Uuid;

use crate::{Result, Store, timestamp};

/// Columns of [`EmailOperationRow`], in its order.
const OPERATION_COLUMNS: &str = "id, account_id, thread, kind, state, error, created_at, updated_at, reconciled_at";

/// An operation as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmailOperationRow {
    pub id: Uuid,
    pub account_id: String,
    /// The thread a write changes; `None` for a refresh.
    pub thread: Option<Uuid>,
    /// `refresh`, `archive`, `move_to_inbox`, `report_spam` or `not_spam`.
    pub kind: String,
    /// `queued`, `dispatching`, `succeeded`, `failed` or `uncertain`.
    pub state: String,
    /// A stable code when it failed or was left uncertain.
    pub error: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// When an uncertain write was settled by reading the thread.
    pub reconciled_at: Option<Timestamp>,
}

#[derive(sqlx::FromRow)]
struct OperationRecord {
    id: Uuid,
    account_id: String,
    thread: Option<Uuid>,
    kind: String,
    state: String,
    error: Option<String>,
    created_at: jiff_sqlx::Timestamp,
    updated_at: jiff_sqlx::Timestamp,
    reconciled_at: Option<jiff_sqlx::Timestamp>,
}

impl From<OperationRecord> for EmailOperationRow {
    fn from(record: OperationRecord) -> Self {
        EmailOperationRow {
            id: record.id,
            account_id: record.account_id,
            thread: record.thread,
            kind: record.kind,
            state: record.state,
            error: record.error,
            created_at: timestamp(record.created_at),
            updated_at: timestamp(record.updated_at),
            reconciled_at: record.reconciled_at.map(timestamp),
        }
    }
}

/// A refresh request's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefreshRequest {
    pub operation: EmailOperationRow,
    /// False when a refresh of the account was admitted within the interval: `operation` is
    /// that one.
    pub admitted: bool,
}

impl Store {
    /// Requests a refresh of `account_id`: a new operation, unless one was admitted within
    /// `interval` (by this store's clock), which is answered instead. `None` when the account
    /// has no row.
    pub async fn email_request_refresh(&self, account_id: &str, interval: Duration) -> Result<Option<RefreshRequest>> {
        let now = self.now();
        self.transaction(
            async |conn| {
                // Two requests at once admit one refresh: they queue on this account's lock.
                sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('email_refresh:' || $1, 0))")
                    .bind(account_id)
                    .execute(&mut *conn)
                    .await?;
                let exists: Option<(String,)> =
                    sqlx::query_as("SELECT account_id FROM email_accounts WHERE account_id = $1")
                        .bind(account_id)
                        .fetch_optional(&mut *conn)
                        .await?;
                if exists.is_none() {
                    return Ok(None);
                }
                let recent: Option<OperationRecord> = sqlx::query_as(&format!(
                    "SELECT {OPERATION_COLUMNS} FROM email_operations
                     WHERE account_id = $1 AND kind = 'refresh' AND created_at > $2
                     ORDER BY created_at DESC LIMIT 1"
                ))
                .bind(account_id)
                .bind(jiff_sqlx::Timestamp::from(
                    now - jiff::SignedDuration::try_from(interval).unwrap_or(jiff::SignedDuration::ZERO),
                ))
                .fetch_optional(&mut *conn)
                .await?;
                if let Some(recent) = recent {
                    return Ok(Some(RefreshRequest {
                        operation: recent.into(),
                        admitted: false,
                    }));
                }
                let record: OperationRecord = sqlx::query_as(&format!(
                    "INSERT INTO email_operations (id, account_id, kind, created_at, updated_at)
                     VALUES ($1, $2, 'refresh', $3, $3) RETURNING {OPERATION_COLUMNS}"
                ))
                .bind(Uuid::now_v7())
                .bind(account_id)
                .bind(jiff_sqlx::Timestamp::from(now))
                .fetch_one(&mut *conn)
                .await?;
                Ok(Some(RefreshRequest {
                    operation: record.into(),
                    admitted: true,
                }))
            },
            |_| true,
        )
        .await
    }

    pub async fn email_operation(&self, id: Uuid) -> Result<Option<EmailOperationRow>> {
        let record: Option<OperationRecord> = sqlx::query_as(&format!(
            "SELECT {OPERATION_COLUMNS} FROM email_operations WHERE id = $1"
        ))
        .bind(id)
        .fetch_optional(&self.pool)
        .await?;
        Ok(record.map(EmailOperationRow::from))
    }

    /// Claims the oldest queued refresh (or one whose claim expired) for `lease`.
    pub async fn email_claim_refresh(&self, worker: &str, lease: Duration) -> Result<Option<EmailOperationRow>> {
        let record: Option<OperationRecord> = sqlx::query_as(&format!(
            "UPDATE email_operations SET state = 'dispatching', claimed_by = $1, lease_until = $2, updated_at = $3
             WHERE id = (SELECT id FROM email_operations
                         WHERE kind = 'refresh' AND (state = 'queued' OR (state = 'dispatching' AND lease_until < $3))
                         ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
             RETURNING {OPERATION_COLUMNS}"
        ))
        .bind(worker)
        .bind(self.after(lease))
        .bind(self.now_sql())
        .fetch_optional(&self.pool)
        .await?;
        Ok(record.map(EmailOperationRow::from))
    }

    /// Settles a claimed refresh: succeeded, or failed with a stable code.
    pub async fn email_settle_refresh(&self, id: Uuid, error: Option<&str>) -> Result<()> {
        sqlx::query(
            "UPDATE email_operations SET state = CASE WHEN $2::text IS NULL THEN 'succeeded' ELSE 'failed' END,
                 error = $2, lease_until = NULL, updated_at = $3
             WHERE id = $1 AND kind = 'refresh' AND state = 'dispatching'",
        )
        .bind(id)
        .bind(error)
        .bind(self.now_sql())
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// This store's clock plus `lease`, as bound into a statement.
    fn after(&self, lease: Duration) -> jiff_sqlx::Timestamp {
        let lease = jiff::SignedDuration::try_from(lease).unwrap_or(jiff::SignedDuration::ZERO);
        jiff_sqlx::Timestamp::from(self.now() + lease)
    }
}

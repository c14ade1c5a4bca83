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

use domain::email::{EmailOperationKind, EmailOperationState, MailboxWrite};
use domain::ids::{AccountId, DraftId, EmailOperationId, ThreadId};
use jiff::Timestamp;
use uuid::Uuid;

use crate::email::Email;
use crate::email::projection::apply_labels;
use crate::{Result, StoreError, named, timestamp};

/// The provider writes among the operations (not refreshes, nor the agent's proposed replies).
pub(crate) const WRITE_KINDS: &str = "kind IN ('archive', 'move_to_inbox', 'report_spam', 'not_spam')";

/// A write that has not settled: queued, under way, or uncertain and not yet read back.
pub(crate) const UNSETTLED: &str =
    "(state IN ('queued', 'dispatching') OR (state = 'uncertain' AND reconciled_at IS NULL))";

/// Columns of [`EmailOperationRow`], in its order.
pub(crate) const OPERATION_COLUMNS: &str =
    "id, account_id, thread, kind, state, error, created_at, updated_at, reconciled_at, draft";

/// An operation as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmailOperationRow {
    pub id: EmailOperationId,
    pub account_id: AccountId,
    /// The thread a write changes; `None` for a refresh.
    pub thread: Option<ThreadId>,
    pub kind: EmailOperationKind,
    pub state: EmailOperationState,
    /// A stable code when it failed or was left uncertain.
    pub error: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    /// When an uncertain write was settled by reading the thread.
    pub reconciled_at: Option<Timestamp>,
    /// A proposed reply's draft.
    pub draft: Option<DraftId>,
}

#[derive(sqlx::FromRow)]
pub(crate) struct OperationRecord {
    id: Uuid,
    account_id: String,
    thread: Option<Uuid>,
    kind: String,
    state: String,
    error: Option<String>,
    created_at: jiff_sqlx::Timestamp,
    updated_at: jiff_sqlx::Timestamp,
    reconciled_at: Option<jiff_sqlx::Timestamp>,
    draft: Option<Uuid>,
}

/// A claimed write with its thread's provider id.
#[derive(sqlx::FromRow)]
struct ClaimRecord {
    #[sqlx(flatten)]
    operation: OperationRecord,
    provider_thread_id: String,
}

impl TryFrom<OperationRecord> for EmailOperationRow {
    type Error = StoreError;

    fn try_from(record: OperationRecord) -> Result<Self> {
        Ok(EmailOperationRow {
            id: record.id.into(),
            account_id: record.account_id.into(),
            thread: record.thread.map(ThreadId::from),
            kind: named(record.kind)?,
            state: named(record.state)?,
            error: record.error,
            created_at: timestamp(record.created_at),
            updated_at: timestamp(record.updated_at),
            reconciled_at: record.reconciled_at.map(timestamp),
            draft: record.draft.map(DraftId::from),
        })
    }
}

/// A write request's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteRequest {
    Accepted(EmailOperationRow),
    UnknownThread,
    /// The thread is not where this write applies (`in_inbox`, `archived`, `in_spam`,
    /// `not_in_spam`: where it is).
    NotApplicable(&'static str),
    /// Another write of the thread has not settled yet.
    Pending(EmailOperationRow),
}

/// A write claimed by a worker, with the thread it changes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimedWrite {
    pub operation: EmailOperationRow,
    pub kind: MailboxWrite,
    pub provider_thread_id: String,
}

/// How a provider write ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WriteOutcome {
    /// Applied: the thread's messages now carry these labels (provider message id, labels).
    Succeeded(Vec<(String, Vec<String>)>),
    /// Refused (a stable code): nothing changed.
    Failed(String),
    /// Nothing proves whether it happened (a stable code): reconcile by reading, never repeat.
    Uncertain(String),
}

/// What reading the thread showed about an uncertain write.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Reconciliation {
    /// The labels show it applied.
    Applied(Vec<(String, Vec<String>)>),
    /// The labels show it did not (the owner may ask again).
    NotApplied(Vec<(String, Vec<String>)>),
    /// The thread is gone from the mailbox.
    Gone,
}

/// The code of a write the labels show was not applied.
pub const NOT_APPLIED: &str = "mail.not_applied";
/// The code of a write whose thread is gone.
pub const THREAD_GONE: &str = "mail.thread_gone";

/// A refresh request's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RefreshRequest {
    pub operation: EmailOperationRow,
    /// False when a refresh of the account was admitted within the interval: `operation` is
    /// that one.
    pub admitted: bool,
}

impl Email<'_> {
    /// Requests a refresh of `account_id`: a new operation, unless one was admitted within
    /// `interval` (by this store's clock), which is answered instead. `None` when the account
    /// has no row.
    pub async fn request_refresh(self, account_id: &AccountId, interval: Duration) -> Result<Option<RefreshRequest>> {
        let now = self.now();
        self.transaction(
            async |conn| {
                // Two requests at once admit one refresh: they queue on this account's lock.
                sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('email_refresh:' || $1, 0))")
                    .bind(account_id.as_str())
                    .execute(&mut *conn)
                    .await?;
                let exists: Option<(String,)> =
                    sqlx::query_as("SELECT account_id FROM email_accounts WHERE account_id = $1")
                        .bind(account_id.as_str())
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
                .bind(account_id.as_str())
                .bind(jiff_sqlx::Timestamp::from(now - signed(interval)))
                .fetch_optional(&mut *conn)
                .await?;
                if let Some(recent) = recent {
                    return Ok(Some(RefreshRequest {
                        operation: recent.try_into()?,
                        admitted: false,
                    }));
                }
                let record: OperationRecord = sqlx::query_as(&format!(
                    "INSERT INTO email_operations (id, account_id, kind, created_at, updated_at)
                     VALUES ($1, $2, 'refresh', $3, $3) RETURNING {OPERATION_COLUMNS}"
                ))
                .bind(Uuid::now_v7())
                .bind(account_id.as_str())
                .bind(jiff_sqlx::Timestamp::from(now))
                .fetch_one(&mut *conn)
                .await?;
                Ok(Some(RefreshRequest {
                    operation: record.try_into()?,
                    admitted: true,
                }))
            },
            |_| true,
        )
        .await
    }

    pub async fn operation(self, id: EmailOperationId) -> Result<Option<EmailOperationRow>> {
        let record: Option<OperationRecord> = sqlx::query_as(&format!(
            "SELECT {OPERATION_COLUMNS} FROM email_operations WHERE id = $1"
        ))
        .bind(id.as_uuid())
        .fetch_optional(&self.pool)
        .await?;
        record.map(EmailOperationRow::try_from).transpose()
    }

    /// Claims the oldest queued refresh (or one whose claim expired) for `lease`.
    pub async fn claim_refresh(self, worker: &str, lease: Duration) -> Result<Option<EmailOperationRow>> {
        let record: Option<OperationRecord> = sqlx::query_as(&claim_statement("refresh", ""))
            .bind(worker)
            .bind(self.after(lease))
            .bind(self.now_sql())
            .fetch_optional(&self.pool)
            .await?;
        record.map(EmailOperationRow::try_from).transpose()
    }

    /// Settles a claimed refresh: succeeded, or failed with a stable code.
    pub async fn settle_refresh(self, id: EmailOperationId, error: Option<&str>) -> Result<()> {
        let mut conn = self.pool.acquire().await?;
        settle_claimed(&mut conn, id, "refresh", error, self.now_sql()).await
    }

    /// Requests the write `kind` of `thread`, where it applies and when no other write of the
    /// thread is unsettled.
    pub async fn request_write(self, thread: ThreadId, kind: MailboxWrite) -> Result<WriteRequest> {
        let now = self.now_sql();
        self.transaction(
            async |conn| {
                let place: Option<(String, bool, bool)> =
                    sqlx::query_as("SELECT account_id, in_inbox, in_spam FROM email_threads WHERE id = $1 FOR UPDATE")
                        .bind(thread.as_uuid())
                        .fetch_optional(&mut *conn)
                        .await?;
                let Some((account_id, in_inbox, in_spam)) = place else {
                    return Ok(WriteRequest::UnknownThread);
                };
                let pending: Option<OperationRecord> = sqlx::query_as(&format!(
                    "SELECT {OPERATION_COLUMNS} FROM email_operations
                     WHERE thread = $1 AND {WRITE_KINDS} AND {UNSETTLED}
                     ORDER BY created_at LIMIT 1"
                ))
                .bind(thread.as_uuid())
                .fetch_optional(&mut *conn)
                .await?;
                if let Some(pending) = pending {
                    return Ok(WriteRequest::Pending(pending.try_into()?));
                }
                let refused = match kind {
                    _ if in_spam && kind != MailboxWrite::NotSpam => Some("in_spam"),
                    MailboxWrite::Archive | MailboxWrite::ReportSpam if !in_inbox => Some("archived"),
                    MailboxWrite::MoveToInbox if in_inbox => Some("in_inbox"),
                    MailboxWrite::NotSpam if !in_spam => Some("not_in_spam"),
                    _ => None,
                };
                if let Some(place) = refused {
                    return Ok(WriteRequest::NotApplicable(place));
                }
                let record: OperationRecord = sqlx::query_as(&format!(
                    "INSERT INTO email_operations (id, account_id, thread, kind, created_at, updated_at)
                     VALUES ($1, $2, $3, $4, $5, $5) RETURNING {OPERATION_COLUMNS}"
                ))
                .bind(Uuid::now_v7())
                .bind(&account_id)
                .bind(thread.as_uuid())
                .bind(kind.as_str())
                .bind(now)
                .fetch_one(&mut *conn)
                .await?;
                Ok(WriteRequest::Accepted(record.try_into()?))
            },
            |_| true,
        )
        .await
    }

    /// Claims the oldest queued write for `lease`; it stays `queued` until
    /// [`Store::email_mark_dispatching`].
    pub async fn claim_write(self, worker: &str, lease: Duration) -> Result<Option<ClaimedWrite>> {
        self.claim_write_due(worker, lease, "state = 'queued'").await
    }

    /// Claims the oldest uncertain write not yet reconciled, for one reading of its thread.
    pub async fn claim_uncertain(self, worker: &str, lease: Duration) -> Result<Option<ClaimedWrite>> {
        self.claim_write_due(worker, lease, "state = 'uncertain' AND reconciled_at IS NULL")
            .await
    }

    async fn claim_write_due(self, worker: &str, lease: Duration, due: &str) -> Result<Option<ClaimedWrite>> {
        let claimed: Option<ClaimRecord> = sqlx::query_as(&format!(
            "WITH claimed AS (
                 UPDATE email_operations SET claimed_by = $1, lease_until = $2, updated_at = $3
                 WHERE id = (SELECT id FROM email_operations
                             WHERE {WRITE_KINDS} AND {due} AND (lease_until IS NULL OR lease_until < $3)
                             ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
                 RETURNING {OPERATION_COLUMNS})
             SELECT claimed.*, t.provider_thread_id FROM claimed JOIN email_threads t ON t.id = claimed.thread"
        ))
        .bind(worker)
        .bind(self.after(lease))
        .bind(self.now_sql())
        .fetch_optional(&self.pool)
        .await?;
        let Some(ClaimRecord {
            operation,
            provider_thread_id,
        }) = claimed
        else {
            return Ok(None);
        };
        let operation = EmailOperationRow::try_from(operation)?;
        let kind = MailboxWrite::of(operation.kind).ok_or_else(|| {
            StoreError::Corrupt(format!(
                "email operation {} of kind {} claimed as a write",
                operation.id, operation.kind
            ))
        })?;
        Ok(Some(ClaimedWrite {
            operation,
            kind,
            provider_thread_id,
        }))
    }

    /// Marks a claimed write as leaving now, committed before its request is sent; false when
    /// the claim was lost (another worker's now).
    pub async fn mark_dispatching(self, id: EmailOperationId, worker: &str) -> Result<bool> {
        let marked = sqlx::query(
            "UPDATE email_operations SET state = 'dispatching', updated_at = $3
             WHERE id = $1 AND state = 'queued' AND claimed_by = $2",
        )
        .bind(id.as_uuid())
        .bind(worker)
        .bind(self.now_sql())
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(marked == 1)
    }

    /// Settles a dispatched write from the provider's answer; a success records the labels it
    /// left and the thread's handled or reported state.
    pub async fn settle_write(self, claimed: &ClaimedWrite, outcome: &WriteOutcome) -> Result<()> {
        let (state, error) = match outcome {
            WriteOutcome::Succeeded(_) => (EmailOperationState::Succeeded, None),
            WriteOutcome::Failed(code) => (EmailOperationState::Failed, Some(code.as_str())),
            WriteOutcome::Uncertain(code) => (EmailOperationState::Uncertain, Some(code.as_str())),
        };
        self.settle_claimed_write(
            claimed,
            Unsettled::Dispatching,
            (state, error),
            async |conn, now| match outcome {
                WriteOutcome::Succeeded(labels) => applied(conn, claimed, labels, now).await,
                _ => Ok(()),
            },
        )
        .await
    }

    /// Leaves `uncertain` every write still `dispatching` after its claim expired (its worker
    /// died mid-request); how many.
    pub async fn strand_dispatches(self) -> Result<u64> {
        Ok(sqlx::query(&format!(
            "UPDATE email_operations SET state = 'uncertain', error = 'mail.outcome_unknown', lease_until = NULL,
                 updated_at = $1
             WHERE {WRITE_KINDS} AND state = 'dispatching' AND lease_until < $1"
        ))
        .bind(self.now_sql())
        .execute(&self.pool)
        .await?
        .rows_affected())
    }

    /// Settles an uncertain write from what reading its thread showed.
    pub async fn reconcile_write(self, claimed: &ClaimedWrite, reading: &Reconciliation) -> Result<()> {
        let (state, error) = match reading {
            Reconciliation::Applied(_) => (EmailOperationState::Succeeded, None),
            Reconciliation::NotApplied(_) => (EmailOperationState::Failed, Some(NOT_APPLIED)),
            Reconciliation::Gone => (EmailOperationState::Failed, Some(THREAD_GONE)),
        };
        self.settle_claimed_write(
            claimed,
            Unsettled::Uncertain,
            (state, error),
            async |conn, now| match reading {
                Reconciliation::Applied(labels) => applied(conn, claimed, labels, now).await,
                Reconciliation::NotApplied(labels) => apply_labels(conn, claimed.operation.thread_id()?, labels).await,
                Reconciliation::Gone => Ok(()),
            },
        )
        .await
    }

    /// Moves a claimed write that is still `from` to `(state, error)`; `then` runs (at the
    /// settling time) in the same transaction only when it was.
    async fn settle_claimed_write(
        self,
        claimed: &ClaimedWrite,
        from: Unsettled,
        (state, error): (EmailOperationState, Option<&str>),
        then: impl AsyncFnOnce(&mut sqlx::PgConnection, jiff_sqlx::Timestamp) -> Result<()>,
    ) -> Result<()> {
        let now = self.now_sql();
        let (also, from) = match from {
            Unsettled::Dispatching => ("", "state = 'dispatching'"),
            // Reconciled once: the reading is recorded with it.
            Unsettled::Uncertain => (", reconciled_at = $4", "state = 'uncertain' AND reconciled_at IS NULL"),
        };
        self.transaction(
            async |conn| {
                let moved = sqlx::query(&format!(
                    "UPDATE email_operations SET state = $2, error = $3, lease_until = NULL, updated_at = $4{also}
                     WHERE id = $1 AND {from}"
                ))
                .bind(claimed.operation.id.as_uuid())
                .bind(state.as_str())
                .bind(error)
                .bind(now)
                .execute(&mut *conn)
                .await?
                .rows_affected();
                if moved == 1 {
                    then(conn, now).await?;
                }
                Ok(())
            },
            |_| true,
        )
        .await
    }

    /// This store's clock plus `lease`, as bound into a statement.
    pub(crate) fn after(self, lease: Duration) -> jiff_sqlx::Timestamp {
        jiff_sqlx::Timestamp::from(self.now() + signed(lease))
    }
}

/// Where a claimed write settles from: its dispatch, or the reconciliation of an uncertain one.
#[derive(Clone, Copy)]
enum Unsettled {
    Dispatching,
    Uncertain,
}

/// The statement claiming the oldest queued operation of `kind` (a refresh or a proposal, which
/// have no effect outside Steward, so one whose claim expired is simply claimed again) for
/// `$1` until `$2`, at `$3`; it returns [`OPERATION_COLUMNS`] and then `returning`.
pub(crate) fn claim_statement(kind: &str, returning: &str) -> String {
    format!(
        "UPDATE email_operations SET state = 'dispatching', claimed_by = $1, lease_until = $2, updated_at = $3
         WHERE id = (SELECT id FROM email_operations
                     WHERE kind = '{kind}' AND (state = 'queued' OR (state = 'dispatching' AND lease_until < $3))
                     ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
         RETURNING {OPERATION_COLUMNS}{returning}"
    )
}

/// Settles a claimed refresh or proposal (`kind`): succeeded, or failed with a stable code.
pub(crate) async fn settle_claimed(
    conn: &mut sqlx::PgConnection,
    id: EmailOperationId,
    kind: &str,
    error: Option<&str>,
    now: jiff_sqlx::Timestamp,
) -> Result<()> {
    sqlx::query(
        "UPDATE email_operations SET state = CASE WHEN $3::text IS NULL THEN 'succeeded' ELSE 'failed' END,
             error = $3, lease_until = NULL, updated_at = $4
         WHERE id = $1 AND kind = $2 AND state = 'dispatching'",
    )
    .bind(id.as_uuid())
    .bind(kind)
    .bind(error)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// `duration` as a signed one (a duration too long for it counts as none).
fn signed(duration: Duration) -> jiff::SignedDuration {
    jiff::SignedDuration::try_from(duration).unwrap_or(jiff::SignedDuration::ZERO)
}

impl EmailOperationRow {
    /// The thread of a write.
    fn thread_id(&self) -> Result<Uuid> {
        self.thread
            .map(ThreadId::as_uuid)
            .ok_or_else(|| crate::StoreError::Corrupt(format!("email write {} has no thread", self.id)))
    }
}

/// Records what an applied write left: the labels, and the thread's handled or reported state.
async fn applied(
    conn: &mut sqlx::PgConnection,
    claimed: &ClaimedWrite,
    labels: &[(String, Vec<String>)],
    now: jiff_sqlx::Timestamp,
) -> Result<()> {
    let thread = claimed.operation.thread_id()?;
    apply_labels(conn, thread, labels).await?;
    let statement = match claimed.kind {
        MailboxWrite::Archive => "UPDATE email_threads SET handled_at = $2 WHERE id = $1",
        MailboxWrite::MoveToInbox => "UPDATE email_threads SET handled_at = NULL WHERE id = $1 AND $2 IS NOT NULL",
        MailboxWrite::ReportSpam => "UPDATE email_threads SET reported_at = $2, suspected_spam = false WHERE id = $1",
        MailboxWrite::NotSpam => {
            "UPDATE email_threads SET reported_at = NULL, not_spam_at = COALESCE(not_spam_at, $2), suspected_spam = false,
                 junk_state = CASE WHEN junk_state IS NULL THEN NULL ELSE 'restoring' END
             WHERE id = $1"
        }
    };
    sqlx::query(statement).bind(thread).bind(now).execute(conn).await?;
    Ok(())
}

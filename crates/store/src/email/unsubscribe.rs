//! The unsubscribe command (migration 0025): recorded by the api as one `unsubscribe`
//! operation with a row per target, run by the worker target by target.
//!
//! - **Request.** Each target names a subscription with the evidence digest and revision the
//!   owner confirmed. A target whose row moved (another revision or digest), is gone, or is not
//!   eligible (undecided, verified, with a mechanism) is refused on its own; the others run. What
//!   was confirmed (mechanism, full target, destination) is copied into the target, and the row
//!   becomes `unsubscribing`.
//! - **Run.** The worker claims the operation, marks a target `dispatching` (committed) before
//!   its request leaves, and settles it: a success makes the row `unsubscribed` (and, when asked,
//!   queues the archive of the sender's Inbox threads as writes naming the subscription); a
//!   failure or an uncertain outcome restores the row (undecided, with the error) for the owner
//!   to retry, keep or report. A target a dead worker left `dispatching` is `uncertain`
//!   (`unsubscribe.interrupted`), never sent again. The operation settles when its last target
//!   does: `succeeded` when all did, `uncertain` when any was, else `failed`.

use std::time::Duration;

use domain::email::{EmailOperationState, MailboxWrite, SubscriptionState, UnsubscribeMechanism};
use domain::ids::{EmailOperationId, SubscriptionId};
use uuid::Uuid;

use crate::SubscriptionRow;
use crate::email::Email;
use crate::email::operations::{OPERATION_COLUMNS, OperationRecord};
use crate::email::subscriptions::{Conversations, SUBSCRIPTION_COLUMNS, SubscriptionRecord, queue_subscription_writes};
use crate::{EmailOperationRow, Result, named};

/// The code of a target a stopped worker left mid-request.
pub const INTERRUPTED: &str = "unsubscribe.interrupted";

/// One target of a command, as the owner confirmed it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfirmedTarget {
    pub subscription: SubscriptionId,
    pub digest: String,
    pub revision: i64,
}

/// Why a target was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetRefused {
    /// No such subscription.
    NotFound,
    /// The row moved since it was confirmed (another revision or evidence digest).
    Changed,
    /// The row is not eligible: decided, unverified, or offering no mechanism.
    NotEligible,
}

/// An unsubscribe command's answer.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum UnsubscribeRequest {
    /// The operation runs the accepted targets; `refused` lists the others.
    Accepted {
        operation: EmailOperationRow,
        refused: Vec<(SubscriptionId, TargetRefused)>,
    },
    /// Every target was refused: nothing runs.
    NoneAccepted(Vec<(SubscriptionId, TargetRefused)>),
    /// The targets belong to more than one account: nothing runs.
    AccountsDiffer,
}

/// A target as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnsubscribeTargetRow {
    pub operation: EmailOperationId,
    pub position: i16,
    pub subscription: SubscriptionId,
    pub mechanism: UnsubscribeMechanism,
    /// The full target: for the worker only.
    pub target: String,
    pub destination: String,
    pub also_archive: bool,
    pub state: EmailOperationState,
    pub error: Option<String>,
}

/// How one target's request ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TargetOutcome {
    Succeeded,
    Failed(String),
    Uncertain(String),
}

/// A claimed command: the operation and its targets, in order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ClaimedUnsubscribe {
    pub operation: EmailOperationRow,
    /// The account's address, the sender of a mailto message.
    pub owner_address: Option<String>,
    pub targets: Vec<UnsubscribeTargetRow>,
}

#[derive(sqlx::FromRow)]
struct TargetRecord {
    operation: Uuid,
    position: i16,
    subscription: Uuid,
    mechanism: String,
    target: String,
    destination: String,
    also_archive: bool,
    state: String,
    error: Option<String>,
}

impl TryFrom<TargetRecord> for UnsubscribeTargetRow {
    type Error = crate::StoreError;

    fn try_from(record: TargetRecord) -> Result<Self> {
        Ok(UnsubscribeTargetRow {
            operation: record.operation.into(),
            position: record.position,
            subscription: record.subscription.into(),
            mechanism: named(record.mechanism)?,
            target: record.target,
            destination: record.destination,
            also_archive: record.also_archive,
            state: named(record.state)?,
            error: record.error,
        })
    }
}

const TARGET_COLUMNS: &str =
    "operation, position, subscription, mechanism, target, destination, also_archive, state, error";

async fn targets_of(conn: &mut sqlx::PgConnection, operation: Uuid) -> Result<Vec<UnsubscribeTargetRow>> {
    let records: Vec<TargetRecord> = sqlx::query_as(&format!(
        "SELECT {TARGET_COLUMNS} FROM email_unsubscribe_targets WHERE operation = $1 ORDER BY position"
    ))
    .bind(operation)
    .fetch_all(conn)
    .await?;
    records.into_iter().map(UnsubscribeTargetRow::try_from).collect()
}

/// Restores a subscription whose unsubscribe did not succeed: undecided again, with `error`.
async fn restore(
    conn: &mut sqlx::PgConnection,
    subscription: Uuid,
    error: &str,
    now: jiff_sqlx::Timestamp,
) -> Result<()> {
    sqlx::query(
        "UPDATE email_subscriptions
         SET decision = NULL, decided_at = NULL, last_error = $2, updated_at = $3, revision = revision + 1
         WHERE id = $1 AND decision = 'unsubscribing'",
    )
    .bind(subscription)
    .bind(error)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

/// Settles `operation` when none of its targets is still to run: `succeeded` when all did,
/// `uncertain` when any was, else `failed` (the first failure's code).
async fn settle_when_done(conn: &mut sqlx::PgConnection, operation: Uuid, now: jiff_sqlx::Timestamp) -> Result<()> {
    sqlx::query(
        "WITH t AS (
             SELECT count(*) FILTER (WHERE state IN ('queued', 'dispatching')) AS open,
                    count(*) FILTER (WHERE state = 'uncertain') AS uncertain,
                    count(*) FILTER (WHERE state = 'failed') AS failed,
                    (array_agg(error ORDER BY position) FILTER (WHERE error IS NOT NULL))[1] AS first_error
             FROM email_unsubscribe_targets WHERE operation = $1)
         UPDATE email_operations o SET
             state = CASE WHEN t.uncertain > 0 THEN 'uncertain' WHEN t.failed > 0 THEN 'failed' ELSE 'succeeded' END,
             error = t.first_error, lease_until = NULL, updated_at = $2
         FROM t WHERE o.id = $1 AND t.open = 0 AND o.state IN ('queued', 'dispatching')",
    )
    .bind(operation)
    .bind(now)
    .execute(conn)
    .await?;
    Ok(())
}

impl Email<'_> {
    /// Records an unsubscribe command (see the module).
    pub async fn request_unsubscribe(
        self,
        targets: &[ConfirmedTarget],
        also_archive: bool,
    ) -> Result<UnsubscribeRequest> {
        let now = self.now_sql();
        self.transaction(
            async |conn| {
                let mut refused = Vec::new();
                let mut accepted: Vec<(Uuid, String, String, String, String)> = Vec::new();
                for confirmed in targets {
                    let record: Option<SubscriptionRecord> = sqlx::query_as(&format!(
                        "SELECT {SUBSCRIPTION_COLUMNS} FROM email_subscriptions WHERE id = $1 FOR UPDATE"
                    ))
                    .bind(confirmed.subscription.as_uuid())
                    .fetch_optional(&mut *conn)
                    .await?;
                    let Some(row) = record.map(SubscriptionRow::try_from).transpose()? else {
                        refused.push((confirmed.subscription, TargetRefused::NotFound));
                        continue;
                    };
                    if row.revision != confirmed.revision || row.digest != confirmed.digest {
                        refused.push((confirmed.subscription, TargetRefused::Changed));
                        continue;
                    }
                    match (row.state, row.mechanism, row.target, row.destination) {
                        (SubscriptionState::Eligible, Some(mechanism), Some(target), Some(destination)) => {
                            accepted.push((
                                row.id.as_uuid(),
                                row.account_id.into_string(),
                                mechanism.as_str().to_owned(),
                                target,
                                destination,
                            ));
                        }
                        _ => refused.push((confirmed.subscription, TargetRefused::NotEligible)),
                    }
                }
                let Some(account) = accepted.first().map(|(_, account, ..)| account.clone()) else {
                    return Ok(UnsubscribeRequest::NoneAccepted(refused));
                };
                if accepted.iter().any(|(_, other, ..)| *other != account) {
                    return Ok(UnsubscribeRequest::AccountsDiffer);
                }
                let record: OperationRecord = sqlx::query_as(&format!(
                    "INSERT INTO email_operations (id, account_id, kind, created_at, updated_at)
                     VALUES ($1, $2, 'unsubscribe', $3, $3) RETURNING {OPERATION_COLUMNS}"
                ))
                .bind(Uuid::now_v7())
                .bind(&account)
                .bind(now)
                .fetch_one(&mut *conn)
                .await?;
                let operation = EmailOperationRow::try_from(record)?;
                for (position, (subscription, _, mechanism, target, destination)) in accepted.iter().enumerate() {
                    sqlx::query(
                        "INSERT INTO email_unsubscribe_targets
                             (operation, position, subscription, mechanism, target, destination, also_archive, updated_at)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8)",
                    )
                    .bind(operation.id.as_uuid())
                    .bind(i16::try_from(position).unwrap_or(i16::MAX))
                    .bind(subscription)
                    .bind(mechanism)
                    .bind(target)
                    .bind(destination)
                    .bind(also_archive)
                    .bind(now)
                    .execute(&mut *conn)
                    .await?;
                    sqlx::query(
                        "UPDATE email_subscriptions
                         SET decision = 'unsubscribing', decided_at = $2, last_error = NULL, updated_at = $2,
                             revision = revision + 1
                         WHERE id = $1",
                    )
                    .bind(subscription)
                    .bind(now)
                    .execute(&mut *conn)
                    .await?;
                }
                Ok(UnsubscribeRequest::Accepted { operation, refused })
            },
            |outcome| matches!(outcome, UnsubscribeRequest::Accepted { .. }),
        )
        .await
    }

    /// The targets of the unsubscribe operation `operation`, in order.
    pub async fn unsubscribe_targets(self, operation: EmailOperationId) -> Result<Vec<UnsubscribeTargetRow>> {
        let mut conn = self.pool.acquire().await?;
        targets_of(&mut conn, operation.as_uuid()).await
    }

    /// Claims the oldest queued unsubscribe operation (or one whose claim expired, whose target
    /// left dispatching is settled uncertain first) for `lease`.
    pub async fn claim_unsubscribe(self, worker: &str, lease: Duration) -> Result<Option<ClaimedUnsubscribe>> {
        let now = self.now_sql();
        let until = self.after(lease);
        self.transaction(
            async |conn| {
                let record: Option<OperationRecord> = sqlx::query_as(&format!(
                    "UPDATE email_operations SET state = 'dispatching', claimed_by = $1, lease_until = $2, updated_at = $3
                     WHERE id = (SELECT id FROM email_operations
                                 WHERE kind = 'unsubscribe' AND state IN ('queued', 'dispatching')
                                   AND (lease_until IS NULL OR lease_until < $3)
                                 ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
                     RETURNING {OPERATION_COLUMNS}"
                ))
                .bind(worker)
                .bind(until)
                .bind(now)
                .fetch_optional(&mut *conn)
                .await?;
                let Some(record) = record else {
                    return Ok(None);
                };
                let operation = EmailOperationRow::try_from(record)?;
                let id = operation.id.as_uuid();
                // A target a stopped worker left mid-request is uncertain: never sent again.
                let stranded: Vec<(Uuid,)> = sqlx::query_as(
                    "UPDATE email_unsubscribe_targets SET state = 'uncertain', error = $2, updated_at = $3
                     WHERE operation = $1 AND state = 'dispatching' RETURNING subscription",
                )
                .bind(id)
                .bind(INTERRUPTED)
                .bind(now)
                .fetch_all(&mut *conn)
                .await?;
                for (subscription,) in stranded {
                    restore(conn, subscription, INTERRUPTED, now).await?;
                }
                settle_when_done(conn, id, now).await?;
                let owner_address: Option<(Option<String>,)> =
                    sqlx::query_as("SELECT address FROM email_accounts WHERE account_id = $1")
                        .bind(operation.account_id.as_str())
                        .fetch_optional(&mut *conn)
                        .await?;
                let targets = targets_of(conn, id).await?;
                Ok(Some(ClaimedUnsubscribe {
                    operation,
                    owner_address: owner_address.and_then(|(address,)| address),
                    targets,
                }))
            },
            |_| true,
        )
        .await
    }

    /// Marks a queued target of a claimed operation as leaving now, committed before its
    /// request is sent; false when it is not queued or the claim was lost.
    pub async fn mark_target_dispatching(
        self,
        operation: EmailOperationId,
        position: i16,
        worker: &str,
    ) -> Result<bool> {
        let marked = sqlx::query(
            "UPDATE email_unsubscribe_targets t SET state = 'dispatching', updated_at = $4
             FROM email_operations o
             WHERE t.operation = $1 AND t.position = $2 AND t.state = 'queued'
               AND o.id = t.operation AND o.claimed_by = $3 AND o.state = 'dispatching'",
        )
        .bind(operation.as_uuid())
        .bind(position)
        .bind(worker)
        .bind(self.now_sql())
        .execute(&self.pool)
        .await?
        .rows_affected();
        Ok(marked == 1)
    }

    /// Settles a dispatched target (see the module), and its operation when it was the last.
    pub async fn settle_target(
        self,
        operation: EmailOperationId,
        position: i16,
        outcome: &TargetOutcome,
    ) -> Result<()> {
        let now = self.now_sql();
        let (state, error) = match outcome {
            TargetOutcome::Succeeded => ("succeeded", None),
            TargetOutcome::Failed(code) => ("failed", Some(code.as_str())),
            TargetOutcome::Uncertain(code) => ("uncertain", Some(code.as_str())),
        };
        self.transaction(
            async |conn| {
                let settled: Option<(Uuid, bool)> = sqlx::query_as(
                    "UPDATE email_unsubscribe_targets t SET state = $3, error = $4, updated_at = $5
                     FROM email_operations o
                     WHERE t.operation = $1 AND t.position = $2 AND t.state = 'dispatching' AND o.id = t.operation
                     RETURNING t.subscription, t.also_archive",
                )
                .bind(operation.as_uuid())
                .bind(position)
                .bind(state)
                .bind(error)
                .bind(now)
                .fetch_optional(&mut *conn)
                .await?;
                let Some((subscription, also_archive)) = settled else {
                    return Ok(());
                };
                match error {
                    None => {
                        sqlx::query(
                            "UPDATE email_subscriptions
                             SET decision = 'unsubscribed', decided_at = $2, unsubscribed_at = $2, last_error = NULL,
                                 updated_at = $2, revision = revision + 1
                             WHERE id = $1",
                        )
                        .bind(subscription)
                        .bind(now)
                        .execute(&mut *conn)
                        .await?;
                        if also_archive {
                            queue_subscription_writes(
                                conn,
                                subscription,
                                MailboxWrite::Archive,
                                Conversations::InboxFromSender,
                                now,
                            )
                            .await?;
                        }
                    }
                    Some(code) => restore(conn, subscription, code, now).await?,
                }
                settle_when_done(conn, operation.as_uuid(), now).await
            },
            |_| true,
        )
        .await
    }
}

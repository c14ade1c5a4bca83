//! The call worker's side: receipts settled into call records (with the `call_finished`
//! notification in the same transaction), the outbound dispatch journal, reconciliation of
//! uncertain dispatches, the calls still running, and expiry.

use domain::call::{CallDirection, CallFailure, RETENTION_DAYS};
use jiff::Timestamp;
use serde_json::Value;
use uuid::Uuid;

use crate::{Result, Store, timestamp};

/// A receipt with deliveries not yet settled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ReceiptDue {
    pub id: Uuid,
    pub provider_call_id: String,
    /// The latest delivery seen; settling marks the receipt processed up to it, so a delivery
    /// arriving meanwhile is settled again.
    pub last_received_at: jiff_sqlx::Timestamp,
}

/// An ended call as the provider reported it.
#[derive(Clone, Debug, PartialEq)]
pub struct CallResult {
    pub provider_call_id: String,
    pub direction: CallDirection,
    pub counterpart: Option<String>,
    /// Outbound: the local call the dispatch was tagged with.
    pub reference: Option<Uuid>,
    /// Turns of `{user, text}`.
    pub transcript: Value,
    pub summary: Option<String>,
    pub answered_by: Option<String>,
    pub duration_seconds: Option<i32>,
}

/// What settling a call's result did.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Settled {
    /// The call is recorded as finished; `notified` when a `call_finished` notification was
    /// committed with it.
    Recorded { call: Uuid, notified: bool },
    /// It was recorded before (a repeated delivery).
    Duplicate,
    /// An outbound call no reservation of this service placed.
    Unmatched,
    /// The call has not ended yet; a later delivery or poll settles it.
    Pending,
}

/// An approved outbound call the call worker is dispatching.
#[derive(Clone, Debug, PartialEq)]
pub struct OutboundDue {
    pub id: Uuid,
    pub counterpart: String,
    pub brief: Value,
    pub revision: String,
}

/// How a dispatch ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum DispatchOutcome {
    /// The provider accepted it (accepted, not answered).
    Accepted { provider_call_id: String },
    /// It was not placed, and why.
    NotPlaced { failure: CallFailure },
    /// Its outcome is unknown: reconciled from history, never redialled.
    Uncertain,
}

/// An outbound call whose dispatch outcome is unknown.
#[derive(Clone, Debug, PartialEq)]
pub struct UncertainCall {
    pub id: Uuid,
    pub counterpart: String,
    pub dispatched_at: Timestamp,
}

/// A dispatched outbound call not yet settled.
#[derive(Clone, Debug, PartialEq)]
pub struct RunningCall {
    pub id: Uuid,
    pub provider_call_id: String,
    pub dispatched_at: Timestamp,
    /// When the call worker ended it, if it did.
    pub terminated_at: Option<Timestamp>,
}

/// An approved call as claimed: (id, counterpart, brief, revision).
type DueRecord = (Uuid, Option<String>, Option<Value>, Option<String>);
/// A dispatched call as read: (id, provider's id, dispatched, terminated).
type RunningRecord = (
    Uuid,
    Option<String>,
    Option<jiff_sqlx::Timestamp>,
    Option<jiff_sqlx::Timestamp>,
);

async fn notify_finished(conn: &mut sqlx::PgConnection, call: Uuid) -> Result<()> {
    sqlx::query(
        "INSERT INTO notification_outbox (id, kind, call_id, deliver_after)
         VALUES (gen_random_uuid(), 'call_finished', $1, now())",
    )
    .bind(call)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

async fn settle_call(conn: &mut sqlx::PgConnection, result: &CallResult, notify: bool) -> Result<Settled> {
    let recorded: Option<Uuid> =
        match result.direction {
            CallDirection::Inbound => sqlx::query_scalar(
                "INSERT INTO call_records (kind, direction, state, provider_call_id, counterpart, transcript, summary,
                                           answered_by, duration_seconds, finished_at)
                 VALUES ('call', 'inbound', 'finished', $1, $2, $3, $4, $5, $6, now())
                 ON CONFLICT (provider_call_id) WHERE kind = 'call' AND provider_call_id IS NOT NULL DO NOTHING
                 RETURNING id",
            )
            .bind(&result.provider_call_id)
            .bind(&result.counterpart)
            .bind(&result.transcript)
            .bind(&result.summary)
            .bind(&result.answered_by)
            .bind(result.duration_seconds)
            .fetch_optional(&mut *conn)
            .await?,
            CallDirection::Outbound => {
                sqlx::query_scalar(
                    "UPDATE call_records SET state = 'finished', provider_call_id = $1, transcript = $3, summary = $4,
                        answered_by = $5, duration_seconds = $6, finished_at = now(), updated_at = now()
                 WHERE kind = 'call' AND direction = 'outbound'
                   AND (state IN ('dispatching', 'uncertain', 'dispatched')
                        -- Reconciliation gave up on it, yet the provider placed it after all.
                        OR (state = 'not_placed' AND failure = 'not_found_at_provider'))
                   AND (provider_call_id = $1 OR id = $2)
                 RETURNING id",
                )
                .bind(&result.provider_call_id)
                .bind(result.reference)
                .bind(&result.transcript)
                .bind(&result.summary)
                .bind(&result.answered_by)
                .bind(result.duration_seconds)
                .fetch_optional(&mut *conn)
                .await?
            }
        };
    match recorded {
        Some(call) => {
            if notify {
                notify_finished(conn, call).await?;
            }
            Ok(Settled::Recorded { call, notified: notify })
        }
        None => {
            let known: bool = sqlx::query_scalar(
                "SELECT EXISTS (SELECT 1 FROM call_records
                                WHERE kind = 'call' AND (provider_call_id = $1 OR id = $2))",
            )
            .bind(&result.provider_call_id)
            .bind(result.reference)
            .fetch_one(&mut *conn)
            .await?;
            Ok(if known { Settled::Duplicate } else { Settled::Unmatched })
        }
    }
}

impl Store {
    /// Receipts with deliveries not yet settled, oldest first.
    pub async fn receipts_due(&self, limit: i64) -> Result<Vec<ReceiptDue>> {
        let rows: Vec<(Uuid, String, jiff_sqlx::Timestamp)> = sqlx::query_as(
            "SELECT id, provider_call_id, last_received_at FROM call_records
             WHERE kind = 'receipt' AND (processed_at IS NULL OR processed_at < last_received_at)
             ORDER BY last_received_at, id LIMIT $1",
        )
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .map(|(id, provider_call_id, last_received_at)| ReceiptDue {
                id,
                provider_call_id,
                last_received_at,
            })
            .collect())
    }

    /// Settles `receipt` with what the provider reported (`None`: the call has not ended) and
    /// marks it processed up to the delivery it saw, in one transaction with the call record
    /// and, when `notify`, its `call_finished` notification. Repeated and concurrent deliveries
    /// settle once.
    pub async fn settle_receipt(
        &self,
        receipt: &ReceiptDue,
        result: Option<&CallResult>,
        notify: bool,
    ) -> Result<Settled> {
        self.transaction(
            async |conn| {
                sqlx::query("SELECT 1 FROM call_records WHERE id = $1 AND kind = 'receipt' FOR UPDATE")
                    .bind(receipt.id)
                    .execute(&mut *conn)
                    .await?;
                let settled = match result {
                    Some(result) => settle_call(conn, result, notify).await?,
                    None => Settled::Pending,
                };
                sqlx::query(
                    "UPDATE call_records SET processed_at = GREATEST(COALESCE(processed_at, $2), $2)
                     WHERE id = $1",
                )
                .bind(receipt.id)
                .bind(receipt.last_received_at)
                .execute(&mut *conn)
                .await?;
                Ok(settled)
            },
            |_| true,
        )
        .await
    }

    /// Settles an outbound call found ended by polling (its webhook lost or late).
    pub async fn settle_call_result(&self, result: &CallResult, notify: bool) -> Result<Settled> {
        self.transaction(async |conn| settle_call(conn, result, notify).await, |_| true)
            .await
    }

    /// Claims the oldest approved outbound call and journals its dispatch (`dispatching`),
    /// committed before the request leaves: a crash from here on leaves it `uncertain`, never
    /// sent twice.
    pub async fn claim_dispatch(&self) -> Result<Option<OutboundDue>> {
        let row: Option<DueRecord> = sqlx::query_as(
            "UPDATE call_records SET state = 'dispatching', dispatched_at = now(), updated_at = now()
             WHERE id = (SELECT id FROM call_records WHERE kind = 'call' AND state = 'approved'
                         ORDER BY received_at LIMIT 1 FOR UPDATE SKIP LOCKED)
             RETURNING id, counterpart, brief, revision",
        )
        .fetch_optional(&self.pool)
        .await?;
        Ok(row.and_then(|(id, counterpart, brief, revision)| {
            Some(OutboundDue {
                id,
                counterpart: counterpart?,
                brief: brief?,
                revision: revision?,
            })
        }))
    }

    /// Records how a journaled dispatch ended.
    pub async fn record_dispatch(&self, id: Uuid, outcome: &DispatchOutcome) -> Result<()> {
        let query = match outcome {
            DispatchOutcome::Accepted { provider_call_id } => sqlx::query(
                "UPDATE call_records SET state = 'dispatched', provider_call_id = $2, updated_at = now()
                 WHERE id = $1 AND state IN ('dispatching', 'uncertain')",
            )
            .bind(id)
            .bind(provider_call_id),
            DispatchOutcome::NotPlaced { failure } => sqlx::query(
                "UPDATE call_records SET state = 'not_placed', failure = $2, finished_at = now(), updated_at = now()
                 WHERE id = $1 AND state IN ('dispatching', 'uncertain')",
            )
            .bind(id)
            .bind(failure.as_str()),
            DispatchOutcome::Uncertain => sqlx::query(
                "UPDATE call_records SET state = 'uncertain', updated_at = now()
                 WHERE id = $1 AND state = 'dispatching'",
            )
            .bind(id),
        };
        query.execute(&self.pool).await?;
        Ok(())
    }

    /// Settles a dispatched call whose result the provider will never give (it no longer knows
    /// the call, or it did not report an end long after the call was stopped): finished, with
    /// `failure` and no transcript, and the reservation released.
    pub async fn abandon_call(&self, id: Uuid, failure: CallFailure, notify: bool) -> Result<bool> {
        self.transaction(
            async |conn| {
                let settled = sqlx::query(
                    "UPDATE call_records SET state = 'finished', failure = $2, finished_at = now(), updated_at = now()
                     WHERE id = $1 AND kind = 'call' AND state = 'dispatched'",
                )
                .bind(id)
                .bind(failure.as_str())
                .execute(&mut *conn)
                .await?
                .rows_affected()
                    == 1;
                if settled && notify {
                    notify_finished(conn, id).await?;
                }
                Ok(settled)
            },
            |_| true,
        )
        .await
    }

    /// Dispatches journaled longer than `seconds` ago whose worker never recorded the outcome
    /// (it crashed mid-request) become uncertain.
    pub async fn orphaned_dispatches(&self, seconds: f64) -> Result<u64> {
        Ok(sqlx::query(
            "UPDATE call_records SET state = 'uncertain', updated_at = now()
             WHERE kind = 'call' AND state = 'dispatching' AND dispatched_at < now() - make_interval(secs => $1)",
        )
        .bind(seconds)
        .execute(&self.pool)
        .await?
        .rows_affected())
    }

    /// Outbound calls whose dispatch outcome is unknown.
    pub async fn uncertain_calls(&self, limit: i64) -> Result<Vec<UncertainCall>> {
        let rows: Vec<(Uuid, Option<String>, Option<jiff_sqlx::Timestamp>)> = sqlx::query_as(
            "SELECT id, counterpart, dispatched_at FROM call_records
             WHERE kind = 'call' AND state = 'uncertain' ORDER BY dispatched_at LIMIT $1",
        )
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .filter_map(|(id, counterpart, at)| {
                Some(UncertainCall {
                    id,
                    counterpart: counterpart?,
                    dispatched_at: timestamp(at?),
                })
            })
            .collect())
    }

    /// Dispatched outbound calls not yet settled.
    pub async fn running_calls(&self, limit: i64) -> Result<Vec<RunningCall>> {
        let rows: Vec<RunningRecord> = sqlx::query_as(
            "SELECT id, provider_call_id, dispatched_at, terminated_at FROM call_records
             WHERE kind = 'call' AND state = 'dispatched' ORDER BY dispatched_at LIMIT $1",
        )
        .bind(limit)
        .fetch_all(&self.pool)
        .await?;
        Ok(rows
            .into_iter()
            .filter_map(|(id, provider_call_id, at, terminated_at)| {
                Some(RunningCall {
                    id,
                    provider_call_id: provider_call_id?,
                    dispatched_at: timestamp(at?),
                    terminated_at: terminated_at.map(timestamp),
                })
            })
            .collect())
    }

    /// Records that the call worker ended a call running past its duration.
    pub async fn mark_terminated(&self, id: Uuid) -> Result<()> {
        sqlx::query("UPDATE call_records SET terminated_at = now(), updated_at = now() WHERE id = $1")
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Removes the transcript and summary of up to `limit` calls that ended more than
    /// [`RETENTION_DAYS`] before `now`; returns how many expired.
    pub async fn expire_calls(&self, now: Timestamp, limit: i64) -> Result<u64> {
        Ok(sqlx::query(
            "UPDATE call_records SET transcript = NULL, summary = NULL, expired_at = $1, updated_at = now()
             WHERE id IN (SELECT id FROM call_records
                          WHERE kind = 'call' AND expired_at IS NULL AND finished_at IS NOT NULL
                            AND finished_at < $1 - make_interval(days => $2)
                          ORDER BY finished_at LIMIT $3 FOR UPDATE SKIP LOCKED)",
        )
        .bind(jiff_sqlx::Timestamp::from(now))
        .bind(RETENTION_DAYS as i32)
        .bind(limit)
        .execute(&self.pool)
        .await?
        .rows_affected())
    }
}

//! The notify role's side of notifications: claiming due ones with a lease, recording each
//! device delivered to, deactivating devices the push provider rejects, and withdrawals.

use domain::notification::{Alert, NotificationKind};
use jiff::Timestamp;
use sqlx::Row;
use sqlx::postgres::PgRow;
use uuid::Uuid;

use crate::{NotificationRow, Result, Store};

/// A device to push to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceTarget {
    pub id: Uuid,
    pub push_token: String,
    pub environment: String,
}

/// A claimed notification: what to send and to whom.
#[derive(Clone, Debug, PartialEq)]
pub struct DueNotification {
    pub notification: NotificationRow,
    /// Active devices of the owner not yet delivered to.
    pub devices: Vec<DeviceTarget>,
    /// For approvals, the tool's name; for schedule outcomes, the occurrence state and reason.
    pub tool: Option<String>,
    pub outcome: Option<(String, Option<String>)>,
}

impl DueNotification {
    /// The alert text: the next action, and the tool for approvals; never content.
    pub fn alert(&self) -> Alert<'_> {
        match self.notification.kind {
            NotificationKind::Approval => Alert::Approval {
                tool: self.tool.as_deref().unwrap_or_default(),
            },
            NotificationKind::Question => Alert::Question,
            NotificationKind::CallFinished => Alert::CallFinished,
            NotificationKind::ScheduleOutcome => {
                let (state, reason) = self
                    .outcome
                    .as_ref()
                    .map_or(("failed", None), |(s, r)| (s.as_str(), r.as_deref()));
                Alert::ScheduleOutcome { state, reason }
            }
        }
    }
}

const OWNER: &str = "COALESCE(s.principal_id, sc.principal_id)";
const OWNERSHIP: &str = "LEFT JOIN sessions s ON s.id = o.session_id
     LEFT JOIN schedule_occurrences so ON so.id = o.occurrence_id
     LEFT JOIN schedules sc ON sc.id = so.schedule_id";

fn device(row: &PgRow) -> Result<DeviceTarget> {
    Ok(DeviceTarget {
        id: row.try_get("id")?,
        push_token: row.try_get("push_token")?,
        environment: row.try_get("environment")?,
    })
}

impl Store {
    /// Claims up to `limit` notifications due at `now` (neither delivered, obsolete nor
    /// acknowledged, and not claimed by a live notifier) for `lease_seconds`.
    pub async fn claim_due_notifications(
        &self,
        worker: &str,
        now: Timestamp,
        lease_seconds: u32,
        limit: u32,
    ) -> Result<Vec<DueNotification>> {
        let claimed: Vec<Uuid> = sqlx::query_scalar(
            "UPDATE notification_outbox SET claimed_by = $1, claim_expires_at = now() + make_interval(secs => $3),
                 attempts = attempts + 1
             WHERE id IN (
                 SELECT id FROM notification_outbox
                 WHERE delivered_at IS NULL AND obsolete_at IS NULL AND acknowledged_at IS NULL AND deliver_after <= $2
                   AND (claim_expires_at IS NULL OR claim_expires_at < now())
                 ORDER BY deliver_after LIMIT $4 FOR UPDATE SKIP LOCKED)
             RETURNING id",
        )
        .bind(worker)
        .bind(jiff_sqlx::Timestamp::from(now))
        .bind(f64::from(lease_seconds))
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        let mut due = Vec::with_capacity(claimed.len());
        for id in claimed {
            let sql = format!(
                "SELECT o.id, o.kind, o.session_id, o.run_id, o.approval_id, o.question_id, o.occurrence_id, o.call_id,
                        o.deliver_after, o.created_at, {OWNER} AS owner, a.tool, so.state AS outcome_state,
                        so.reason AS outcome_reason
                 FROM notification_outbox o {OWNERSHIP} LEFT JOIN approvals a ON a.id = o.approval_id
                 WHERE o.id = $1"
            );
            let row = sqlx::query(&sql).bind(id).fetch_one(&self.pool).await?;
            let notification = NotificationRow::from_row(&row)?;
            let owner: Option<String> = row.try_get("owner")?;
            let devices = sqlx::query(
                "SELECT d.id, d.push_token, d.environment FROM devices d
                 WHERE d.principal_id = $1 AND d.active
                   AND NOT EXISTS (SELECT 1 FROM notification_deliveries x WHERE x.notification_id = $2 AND x.device_id = d.id)
                 ORDER BY d.created_at",
            )
            .bind(owner)
            .bind(id)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(device)
            .collect::<Result<Vec<_>>>()?;
            let outcome_state: Option<String> = row.try_get("outcome_state")?;
            due.push(DueNotification {
                notification,
                devices,
                tool: row.try_get("tool")?,
                outcome: outcome_state.map(|state| (state, row.try_get("outcome_reason").ok().flatten())),
            });
        }
        Ok(due)
    }

    /// Records that `device` received `notification`, so a retry does not send it again.
    pub async fn record_delivery(&self, notification: Uuid, device: Uuid) -> Result<()> {
        sqlx::query(
            "INSERT INTO notification_deliveries (notification_id, device_id) VALUES ($1, $2) ON CONFLICT DO NOTHING",
        )
        .bind(notification)
        .bind(device)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Marks a claimed notification delivered (to every device that could take it).
    pub async fn finish_delivery(&self, notification: Uuid, worker: &str) -> Result<()> {
        sqlx::query(
            "UPDATE notification_outbox SET delivered_at = now(), claimed_by = NULL, claim_expires_at = NULL
             WHERE id = $1 AND claimed_by = $2",
        )
        .bind(notification)
        .bind(worker)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// Gives a claimed notification back, to be tried again after `retry_seconds`.
    pub async fn retry_delivery(&self, notification: Uuid, worker: &str, retry_seconds: u32) -> Result<()> {
        sqlx::query(
            "UPDATE notification_outbox SET claim_expires_at = now() + make_interval(secs => $3)
             WHERE id = $1 AND claimed_by = $2",
        )
        .bind(notification)
        .bind(worker)
        .bind(f64::from(retry_seconds))
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// How many times a notification was claimed.
    pub async fn notification_attempts(&self, notification: Uuid) -> Result<i32> {
        Ok(
            sqlx::query_scalar("SELECT attempts FROM notification_outbox WHERE id = $1")
                .bind(notification)
                .fetch_one(&self.pool)
                .await?,
        )
    }

    /// Deactivates a device the push provider reported gone; it is never pushed to again.
    pub async fn deactivate_device(&self, device: Uuid, reason: &str) -> Result<()> {
        sqlx::query("UPDATE devices SET active = false, deactivated_reason = $2, updated_at = now() WHERE id = $1")
            .bind(device)
            .bind(reason)
            .execute(&self.pool)
            .await?;
        Ok(())
    }

    /// Delivered notifications that became obsolete or were acknowledged and were not yet
    /// withdrawn, with the devices they reached.
    pub async fn pending_withdrawals(&self, limit: u32) -> Result<Vec<(Uuid, Vec<DeviceTarget>)>> {
        let ids: Vec<Uuid> = sqlx::query_scalar(
            "SELECT id FROM notification_outbox
             WHERE delivered_at IS NOT NULL AND withdrawn_at IS NULL AND (obsolete_at IS NOT NULL OR acknowledged_at IS NOT NULL)
             ORDER BY delivered_at LIMIT $1",
        )
        .bind(i64::from(limit))
        .fetch_all(&self.pool)
        .await?;
        let mut withdrawals = Vec::with_capacity(ids.len());
        for id in ids {
            let devices = sqlx::query(
                "SELECT d.id, d.push_token, d.environment FROM notification_deliveries x JOIN devices d ON d.id = x.device_id
                 WHERE x.notification_id = $1 AND d.active",
            )
            .bind(id)
            .fetch_all(&self.pool)
            .await?
            .iter()
            .map(device)
            .collect::<Result<Vec<_>>>()?;
            withdrawals.push((id, devices));
        }
        Ok(withdrawals)
    }

    pub async fn finish_withdrawal(&self, notification: Uuid) -> Result<()> {
        sqlx::query("UPDATE notification_outbox SET withdrawn_at = now() WHERE id = $1")
            .bind(notification)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}

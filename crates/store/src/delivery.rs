//! The notify role's side of notifications: claiming due ones with a lease, recording each
//! device delivered to, deactivating devices the push provider rejects, and withdrawals.

use std::collections::HashMap;

use domain::notification::{Alert, NotificationKind};
use domain::schedule::OccurrenceState;
use jiff::Timestamp;
use sqlx::FromRow;
use uuid::Uuid;

use crate::{NotificationRow, Result, Store, named_optional};

/// A device to push to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceTarget {
    pub id: Uuid,
    pub address: PushAddress,
}

/// Where a device's pushes go.
#[derive(Clone, PartialEq, Eq)]
pub enum PushAddress {
    /// An APNs device token (hexadecimal) and the environment it belongs to.
    Apns { token: String, environment: String },
    /// A Web Push subscription: the push service's endpoint and the keys the payload is
    /// encrypted to (base64url, as the browser gives them).
    WebPush {
        endpoint: String,
        p256dh: String,
        auth: String,
    },
}

/// Tokens, endpoints and keys are capabilities: never in a log line.
impl std::fmt::Debug for PushAddress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PushAddress::Apns { environment, .. } => f
                .debug_struct("Apns")
                .field("environment", environment)
                .finish_non_exhaustive(),
            PushAddress::WebPush { .. } => f.debug_struct("WebPush").finish_non_exhaustive(),
        }
    }
}

/// A claimed notification: what to send and to whom.
#[derive(Clone, Debug, PartialEq)]
pub struct DueNotification {
    pub notification: NotificationRow,
    /// Active devices of the owner not yet delivered to.
    pub devices: Vec<DeviceTarget>,
    /// For approvals, the tool's name.
    pub tool: Option<String>,
    /// For schedule outcomes, what the occurrence recorded.
    pub outcome: Option<ScheduleOutcome>,
}

/// What a schedule outcome's alert names, as its occurrence recorded it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScheduleOutcome {
    pub state: OccurrenceState,
    pub reason: Option<String>,
    /// The title of the schedule revision that ran.
    pub title: Option<String>,
    /// The wall time it was scheduled for, in the schedule's zone (`YYYY-MM-DD HH:MM`).
    pub scheduled_local: Option<String>,
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
            NotificationKind::ScheduleOutcome => match &self.outcome {
                Some(outcome) => Alert::ScheduleOutcome {
                    state: outcome.state,
                    reason: outcome.reason.as_deref(),
                    title: outcome.title.as_deref(),
                    scheduled_local: outcome.scheduled_local.as_deref(),
                },
                None => Alert::ScheduleOutcome {
                    state: OccurrenceState::Failed,
                    reason: None,
                    title: None,
                    scheduled_local: None,
                },
            },
        }
    }
}

const OWNER: &str = "COALESCE(s.principal_id, sc.principal_id, cr.principal_id)";
const OWNERSHIP: &str = "LEFT JOIN sessions s ON s.id = o.session_id
     LEFT JOIN schedule_occurrences so ON so.id = o.occurrence_id
     LEFT JOIN schedules sc ON sc.id = so.schedule_id
     LEFT JOIN call_records cr ON cr.id = o.call_id";

/// A notification and one of its owner's devices (none when the join found no device).
#[derive(sqlx::FromRow)]
struct TargetRecord {
    notification_id: Uuid,
    id: Option<Uuid>,
    push_token: Option<String>,
    environment: Option<String>,
    web_push_p256dh: Option<String>,
    web_push_auth: Option<String>,
}

/// The device columns a target needs.
const TARGET_COLUMNS: &str = "d.id, d.push_token, d.environment, d.web_push_p256dh, d.web_push_auth";

impl TargetRecord {
    fn device(self) -> Option<DeviceTarget> {
        let token = self.push_token?;
        let address = match (self.environment, self.web_push_p256dh, self.web_push_auth) {
            (Some(environment), None, None) => PushAddress::Apns { token, environment },
            (None, Some(p256dh), Some(auth)) => PushAddress::WebPush {
                endpoint: token,
                p256dh,
                auth,
            },
            _ => return None,
        };
        Some(DeviceTarget { id: self.id?, address })
    }
}

/// What a claimed notification's alert needs beyond its row.
#[derive(sqlx::FromRow)]
struct AlertRecord {
    tool: Option<String>,
    outcome_state: Option<String>,
    outcome_reason: Option<String>,
    outcome_title: Option<String>,
    outcome_local: Option<String>,
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
        let sql = format!(
            "SELECT o.id, o.kind, o.session_id, o.run_id, o.approval_id, o.question_id, o.occurrence_id, o.call_id,
                    o.deliver_after, o.created_at, a.tool, so.state AS outcome_state, so.reason AS outcome_reason,
                    so.title AS outcome_title, so.scheduled_local AS outcome_local
             FROM notification_outbox o {OWNERSHIP} LEFT JOIN approvals a ON a.id = o.approval_id
             WHERE o.id = ANY($1) ORDER BY o.deliver_after, o.id"
        );
        let rows = sqlx::query(&sql).bind(&claimed).fetch_all(&self.pool).await?;
        // The owner's active devices not yet delivered to, for every claimed notification at once.
        let sql = format!(
            "SELECT o.id AS notification_id, {TARGET_COLUMNS}
             FROM notification_outbox o {OWNERSHIP} JOIN devices d ON d.principal_id = {OWNER} AND d.active
             WHERE o.id = ANY($1)
               AND NOT EXISTS (SELECT 1 FROM notification_deliveries x WHERE x.notification_id = o.id AND
               x.device_id = d.id)
             ORDER BY d.created_at"
        );
        let mut devices: HashMap<Uuid, Vec<DeviceTarget>> = HashMap::new();
        let targets: Vec<TargetRecord> = sqlx::query_as(&sql).bind(&claimed).fetch_all(&self.pool).await?;
        for target in targets {
            let notification = target.notification_id;
            if let Some(device) = target.device() {
                devices.entry(notification).or_default().push(device);
            }
        }
        let mut due = Vec::with_capacity(rows.len());
        for row in rows {
            let notification = NotificationRow::from_row(&row)?;
            let alert = AlertRecord::from_row(&row)?;
            due.push(DueNotification {
                devices: devices.remove(&notification.id).unwrap_or_default(),
                notification,
                tool: alert.tool,
                outcome: named_optional(alert.outcome_state)?.map(|state| ScheduleOutcome {
                    state,
                    reason: alert.outcome_reason,
                    title: alert.outcome_title,
                    scheduled_local: alert.outcome_local,
                }),
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
        // One row per (notification, active device it reached); a notification whose devices are
        // all gone comes once with no device, so it is still marked withdrawn.
        let sql = format!(
            "SELECT o.id AS notification_id, {TARGET_COLUMNS}
             FROM (SELECT id, delivered_at FROM notification_outbox
                   WHERE delivered_at IS NOT NULL AND withdrawn_at IS NULL
                     AND (obsolete_at IS NOT NULL OR acknowledged_at IS NOT NULL)
                   ORDER BY delivered_at LIMIT $1) o
             LEFT JOIN notification_deliveries x ON x.notification_id = o.id
             LEFT JOIN devices d ON d.id = x.device_id AND d.active
             ORDER BY o.delivered_at, o.id"
        );
        let rows: Vec<TargetRecord> = sqlx::query_as(&sql)
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await?;
        let mut withdrawals: Vec<(Uuid, Vec<DeviceTarget>)> = Vec::new();
        for row in rows {
            let id = row.notification_id;
            if withdrawals.last().is_none_or(|(last, _)| *last != id) {
                withdrawals.push((id, Vec::new()));
            }
            if let (Some(device), Some((_, devices))) = (row.device(), withdrawals.last_mut()) {
                devices.push(device);
            }
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

//! Notifications for offline recovery and acknowledgement, and the devices that receive them.

use domain::ids::PrincipalId;
use domain::notification::{DeviceKind, NotificationKind, TapPayload};
use jiff::Timestamp;
use sqlx::postgres::PgRow;
use uuid::Uuid;

use crate::{PushAddress, Result, Store, parsed, timestamp};

/// Push notifications of approvals, questions and schedule outcomes wait this long (the
/// contract's delay), so one resolved meanwhile is never pushed.
pub(crate) const PUSH_DELAY_SECONDS: f64 = 30.0;

#[derive(Clone, Debug, PartialEq)]
pub struct NotificationRow {
    pub id: Uuid,
    pub kind: NotificationKind,
    pub session_id: Option<Uuid>,
    pub run_id: Option<Uuid>,
    pub approval_id: Option<Uuid>,
    pub question_id: Option<Uuid>,
    pub occurrence_id: Option<Uuid>,
    pub call_id: Option<Uuid>,
    pub deliver_after: Timestamp,
    pub created_at: Timestamp,
}

/// A `notification_outbox` row as stored.
#[derive(sqlx::FromRow)]
struct NotificationRecord {
    id: Uuid,
    kind: String,
    session_id: Option<Uuid>,
    run_id: Option<Uuid>,
    approval_id: Option<Uuid>,
    question_id: Option<Uuid>,
    occurrence_id: Option<Uuid>,
    call_id: Option<Uuid>,
    deliver_after: jiff_sqlx::Timestamp,
    created_at: jiff_sqlx::Timestamp,
}

impl NotificationRow {
    pub(crate) fn from_row(row: &PgRow) -> Result<NotificationRow> {
        let record = <NotificationRecord as sqlx::FromRow<PgRow>>::from_row(row)?;
        Ok(NotificationRow {
            id: record.id,
            kind: parsed("notification kind", &record.kind, NotificationKind::parse)?,
            session_id: record.session_id,
            run_id: record.run_id,
            approval_id: record.approval_id,
            question_id: record.question_id,
            occurrence_id: record.occurrence_id,
            call_id: record.call_id,
            deliver_after: timestamp(record.deliver_after),
            created_at: timestamp(record.created_at),
        })
    }

    /// The closed, content-free tap payload.
    pub fn payload(&self) -> TapPayload {
        TapPayload {
            v: 1,
            kind: self.kind,
            notification_id: self.id,
            session_id: self.session_id,
            run_id: self.run_id,
            approval_id: self.approval_id,
            question_id: self.question_id,
            occurrence_id: self.occurrence_id,
            call_id: self.call_id,
        }
    }
}

/// Notifications belong to the principal of their session, of their schedule, or of their call.
const OWNED: &str = "FROM notification_outbox o
     LEFT JOIN sessions s ON s.id = o.session_id
     LEFT JOIN schedule_occurrences so ON so.id = o.occurrence_id
     LEFT JOIN schedules sc ON sc.id = so.schedule_id
     LEFT JOIN call_records cr ON cr.id = o.call_id
     WHERE COALESCE(s.principal_id, sc.principal_id, cr.principal_id) = $1";

#[derive(Clone, Debug, PartialEq)]
pub struct DeviceRow {
    pub id: Uuid,
    pub client_device_id: String,
    pub kind: DeviceKind,
    /// An APNs device's environment; none for Web Push.
    pub environment: Option<String>,
    pub active: bool,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
}

/// Whether an upsert inserted its row (`xmax = 0`) rather than updating one.
#[derive(sqlx::FromRow)]
struct Inserted {
    inserted: bool,
}

/// A `devices` row as stored.
#[derive(sqlx::FromRow)]
struct DeviceRecord {
    id: Uuid,
    client_device_id: String,
    kind: String,
    environment: Option<String>,
    active: bool,
    created_at: jiff_sqlx::Timestamp,
    updated_at: jiff_sqlx::Timestamp,
}

impl DeviceRow {
    fn from_row(row: &PgRow) -> Result<DeviceRow> {
        let record = <DeviceRecord as sqlx::FromRow<PgRow>>::from_row(row)?;
        Ok(DeviceRow {
            id: record.id,
            client_device_id: record.client_device_id,
            kind: parsed("device kind", &record.kind, DeviceKind::parse)?,
            environment: record.environment,
            active: record.active,
            created_at: timestamp(record.created_at),
            updated_at: timestamp(record.updated_at),
        })
    }
}

impl Store {
    /// Notifications still pending: neither obsolete nor acknowledged, oldest first.
    pub async fn pending_notifications(&self, principal: &PrincipalId) -> Result<Vec<NotificationRow>> {
        let sql = format!(
            "SELECT o.id, o.kind, o.session_id, o.run_id, o.approval_id, o.question_id, o.occurrence_id, o.call_id,
                    o.deliver_after, o.created_at
             {OWNED} AND o.obsolete_at IS NULL AND o.acknowledged_at IS NULL ORDER BY o.created_at, o.id"
        );
        let rows = sqlx::query(&sql).bind(principal.as_str()).fetch_all(&self.pool).await?;
        rows.iter().map(NotificationRow::from_row).collect()
    }

    /// Acknowledges a notification for every device; repeating it changes nothing. False when
    /// there is no such notification.
    pub async fn acknowledge_notification(&self, principal: &PrincipalId, id: Uuid) -> Result<bool> {
        let sql = format!(
            "UPDATE notification_outbox SET acknowledged_at = COALESCE(acknowledged_at, now())
             WHERE id = (SELECT o.id {OWNED} AND o.id = $2)"
        );
        let updated = sqlx::query(&sql)
            .bind(principal.as_str())
            .bind(id)
            .execute(&self.pool)
            .await?;
        Ok(updated.rows_affected() == 1)
    }

    /// Registers a device, or moves it to a new address (a rotated token, a new subscription,
    /// even another kind); returns it and whether it is new.
    pub async fn register_device(
        &self,
        principal: &PrincipalId,
        client_device_id: &str,
        address: &PushAddress,
    ) -> Result<(DeviceRow, bool)> {
        let (kind, token, environment, p256dh, auth) = match address {
            PushAddress::Apns { token, environment } => (DeviceKind::Apns, token, Some(environment), None, None),
            PushAddress::WebPush { endpoint, p256dh, auth } => {
                (DeviceKind::WebPush, endpoint, None, Some(p256dh), Some(auth))
            }
        };
        let row = sqlx::query(
            "INSERT INTO devices (id, principal_id, client_device_id, kind, push_token, environment, web_push_p256dh,
                                  web_push_auth)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
             ON CONFLICT (principal_id, client_device_id) DO UPDATE SET kind = excluded.kind,
                 push_token = excluded.push_token, environment = excluded.environment,
                 web_push_p256dh = excluded.web_push_p256dh, web_push_auth = excluded.web_push_auth, active = true,
                 deactivated_reason = NULL, updated_at = now()
             RETURNING id, client_device_id, kind, environment, active, created_at, updated_at, (xmax = 0) AS inserted",
        )
        .bind(Uuid::now_v7())
        .bind(principal.as_str())
        .bind(client_device_id)
        .bind(kind.as_str())
        .bind(token)
        .bind(environment)
        .bind(p256dh)
        .bind(auth)
        .fetch_one(&self.pool)
        .await?;
        let inserted = <Inserted as sqlx::FromRow<PgRow>>::from_row(&row)?;
        Ok((DeviceRow::from_row(&row)?, inserted.inserted))
    }

    /// Revokes a device; false when there is no such device.
    pub async fn revoke_device(&self, principal: &PrincipalId, client_device_id: &str) -> Result<bool> {
        let revoked = sqlx::query(
            "UPDATE devices SET active = false, deactivated_reason = 'revoked', updated_at = now()
             WHERE principal_id = $1 AND client_device_id = $2",
        )
        .bind(principal.as_str())
        .bind(client_device_id)
        .execute(&self.pool)
        .await?;
        Ok(revoked.rows_affected() == 1)
    }
}

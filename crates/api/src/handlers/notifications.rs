//! Notifications for offline recovery and acknowledgement, and device registration. Mounted
//! only with `AGENT_NOTIFICATION_API_ENABLED=1` (otherwise 404, which the client reads as
//! "notifications unavailable").

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json as JsonResponse};
use domain::ErrorCode;
use store::{DeviceRow, NotificationRow};
use uuid::Uuid;
use wire::request::{PushEnvironment, RegisterDevice};
use wire::response::{Device, Notification, NotificationList};

use super::parse_id;
use crate::AppState;
use crate::auth::Caller;
use crate::extract::{Json, Path};
use crate::problem::ApiError;

fn notification(row: &NotificationRow) -> Notification {
    Notification {
        notification_id: row.id,
        kind: row.kind,
        payload: row.payload(),
        created_at: row.created_at,
    }
}

/// Pending notifications (neither obsolete nor acknowledged), oldest first: the offline
/// authority the client reconciles with.
#[utoipa::path(
    get, path = "/v1/notifications", tag = "notifications",
    security(("bearer" = ["notifications.read"])),
    responses((status = 200, description = "Pending notifications", body = NotificationList))
)]
pub async fn pending(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<JsonResponse<NotificationList>, ApiError> {
    let rows = state.store.pending_notifications(&caller.principal).await?;
    Ok(JsonResponse(NotificationList {
        notifications: rows.iter().map(notification).collect(),
    }))
}

/// Acknowledges a notification on every device; repeating it is harmless.
#[utoipa::path(
    post, path = "/v1/notifications/{notification_id}/acknowledge", tag = "notifications",
    security(("bearer" = ["notifications.write"])),
    params(("notification_id" = Uuid, Path)),
    responses(
        (status = 204, description = "Acknowledged"),
    )
)]
pub async fn acknowledge(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(notification_id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let id = parse_id(
        &notification_id,
        |text| Uuid::try_parse(text).ok(),
        ErrorCode::NotificationNotFound,
    )?;
    if state.store.acknowledge_notification(&caller.principal, id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::new(ErrorCode::NotificationNotFound))
    }
}

fn device(row: DeviceRow) -> Device {
    Device {
        device_id: row.id,
        client_device_id: row.client_device_id,
        environment: if row.environment == PushEnvironment::Production.as_str() {
            PushEnvironment::Production
        } else {
            PushEnvironment::Sandbox
        },
        active: row.active,
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}

fn invalid(field: &str, detail: &str) -> ApiError {
    ApiError::new(ErrorCode::ValidationFailed).detail(detail).field(field)
}

/// Registers a device, or rotates its token; posting the same registration again is harmless.
#[utoipa::path(
    post, path = "/v1/devices", tag = "notifications",
    security(("bearer" = ["notifications.write"])),
    request_body = RegisterDevice,
    responses(
        (status = 201, description = "Registered", body = Device),
        (status = 200, description = "Already registered: token and environment updated", body = Device),
    )
)]
pub async fn register(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Json(body): Json<RegisterDevice>,
) -> Result<Response, ApiError> {
    let id = body.client_device_id.as_str();
    if !domain::text::is_visible_ascii(id) || id.len() > 128 {
        return Err(invalid(
            "client_device_id",
            "client_device_id must be 1 to 128 visible ASCII characters",
        ));
    }
    let token = body.push_token.as_str();
    if token.len() < 32 || token.len() > 400 || !token.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(invalid(
            "push_token",
            "push_token must be the device token in hexadecimal (32 to 400 digits)",
        ));
    }
    let (row, created) = state
        .store
        .register_device(
            &caller.principal,
            id,
            &token.to_ascii_lowercase(),
            body.environment.as_str(),
        )
        .await?;
    let status = if created { StatusCode::CREATED } else { StatusCode::OK };
    Ok((status, JsonResponse(device(row))).into_response())
}

/// Revokes a device: it gets no further pushes.
#[utoipa::path(
    delete, path = "/v1/devices/{client_device_id}", tag = "notifications",
    security(("bearer" = ["notifications.write"])),
    params(("client_device_id" = String, Path)),
    responses(
        (status = 204, description = "Revoked"),
    )
)]
pub async fn revoke(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(client_device_id): Path<String>,
) -> Result<StatusCode, ApiError> {
    if state.store.revoke_device(&caller.principal, &client_device_id).await? {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(ApiError::new(ErrorCode::DeviceNotFound))
    }
}

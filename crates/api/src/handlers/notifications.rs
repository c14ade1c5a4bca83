//! Notifications for offline recovery and acknowledgement, and device registration. Mounted
//! only with `AGENT_NOTIFICATION_API_ENABLED=1` (otherwise 404, which the client reads as
//! "notifications unavailable").

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json as JsonResponse};
use domain::ErrorCode;
use store::{DeviceRow, NotificationRow, PushAddress};
use uuid::Uuid;
use wire::request::{PushEnvironment, RegisterDevice, RegisterWebPushDevice};
use wire::response::{Device, DeviceKind, Notification, NotificationList, WebPushKey};

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
        kind: match row.kind {
            domain::notification::DeviceKind::Apns => DeviceKind::Apns,
            domain::notification::DeviceKind::WebPush => DeviceKind::WebPush,
        },
        environment: row.environment.map(|environment| {
            if environment == PushEnvironment::Production.as_str() {
                PushEnvironment::Production
            } else {
                PushEnvironment::Sandbox
            }
        }),
        active: row.active,
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}

/// 201 with the device when it is new, 200 when a registration moved or repeated it.
fn registered(row: DeviceRow, created: bool) -> Response {
    let status = if created { StatusCode::CREATED } else { StatusCode::OK };
    (status, JsonResponse(device(row))).into_response()
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
    let id = client_device_id(&body.client_device_id)?;
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
            &PushAddress::Apns {
                token: token.to_ascii_lowercase(),
                environment: body.environment.as_str().to_owned(),
            },
        )
        .await?;
    Ok(registered(row, created))
}

fn client_device_id(id: &str) -> Result<&str, ApiError> {
    if !domain::text::is_visible_ascii(id) || id.len() > 128 {
        return Err(invalid(
            "client_device_id",
            "client_device_id must be 1 to 128 visible ASCII characters",
        ));
    }
    Ok(id)
}

fn configured_web_push_key(state: &AppState) -> Result<&str, ApiError> {
    state
        .settings
        .web_push_public_key
        .as_deref()
        .ok_or_else(|| ApiError::new(ErrorCode::WebPushUnavailable))
}

/// The VAPID public key a web client subscribes with (its `applicationServerKey`); 404
/// `web_push_unavailable` when the server has none.
#[utoipa::path(
    get, path = "/v1/devices/web-push", tag = "notifications",
    security(("bearer" = ["notifications.read"])),
    responses((status = 200, description = "The application server key", body = WebPushKey))
)]
pub async fn web_push_key(State(state): State<AppState>) -> Result<JsonResponse<WebPushKey>, ApiError> {
    Ok(JsonResponse(WebPushKey {
        application_server_key: configured_web_push_key(&state)?.to_owned(),
    }))
}

/// Registers an installed web client's push subscription as a device, or moves the device to a
/// new subscription; posting the same registration again is harmless.
#[utoipa::path(
    post, path = "/v1/devices/web-push", tag = "notifications",
    security(("bearer" = ["notifications.write"])),
    request_body = RegisterWebPushDevice,
    responses(
        (status = 201, description = "Registered", body = Device),
        (status = 200, description = "Already registered: subscription updated", body = Device),
    )
)]
pub async fn register_web_push(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Json(body): Json<RegisterWebPushDevice>,
) -> Result<Response, ApiError> {
    configured_web_push_key(&state)?;
    let id = client_device_id(&body.client_device_id)?;
    use domain::web_push::{is_auth, is_endpoint, is_p256dh};
    if !is_endpoint(&body.endpoint) {
        return Err(invalid(
            "endpoint",
            "endpoint must be the push service's https URL (at most 2048 characters, no credentials or fragment)",
        ));
    }
    if !is_p256dh(&body.p256dh) {
        return Err(invalid(
            "p256dh",
            "p256dh must be the subscription's uncompressed P-256 key (65 bytes, base64url without padding)",
        ));
    }
    if !is_auth(&body.auth) {
        return Err(invalid(
            "auth",
            "auth must be the subscription's 16-byte secret (base64url without padding)",
        ));
    }
    let (row, created) = state
        .store
        .register_device(
            &caller.principal,
            id,
            &PushAddress::WebPush {
                endpoint: body.endpoint,
                p256dh: body.p256dh,
                auth: body.auth,
            },
        )
        .await?;
    Ok(registered(row, created))
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

//! Liveness and readiness.

use axum::extract::State;
use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use domain::ErrorCode;
use wire::response::{Ready, ReadyStatus};

use crate::AppState;
use crate::problem::ApiError;

/// The response header carrying the release identity.
pub const RELEASE_HEADER: &str = "steward-release";

/// Ready when the database answers and holds exactly this build's migrations.
#[utoipa::path(
    get, path = "/health/ready", tag = "health",
    responses(
        (status = 200, description = "Ready to serve", body = Ready,
         headers(("Steward-Release" = String, description = "Release identity"))),
    )
)]
pub async fn ready(State(state): State<AppState>) -> Response {
    let release = state.settings.release.clone();
    let mut response = match state.store.migrations_current().await {
        Ok(true) => (
            StatusCode::OK,
            axum::Json(Ready {
                status: ReadyStatus::Ready,
                release: release.clone(),
            }),
        )
            .into_response(),
        Ok(false) => ApiError::new(ErrorCode::NotReady)
            .detail("database migrations are not current")
            .into_response(),
        Err(error) => {
            tracing::warn!(%error, "readiness check cannot reach the database");
            ApiError::new(ErrorCode::NotReady)
                .detail("the database is unreachable")
                .into_response()
        }
    };
    if let Ok(value) = HeaderValue::from_str(&release) {
        response.headers_mut().insert(RELEASE_HEADER, value);
    }
    response
}

/// Alive: the process is serving, whatever the database's state (readiness says whether it can
/// do its work). Touches nothing.
#[utoipa::path(
    get, path = "/health/live", tag = "health",
    responses((status = 200, description = "The process is serving (no body)"))
)]
pub async fn live() -> StatusCode {
    StatusCode::OK
}

//! The OpenAPI document of the mounted routes, made once, at its first request, by `crate::openapi`.

use axum::extract::State;
use axum::http::header;
use axum::response::IntoResponse;

use crate::AppState;

/// This document.
#[utoipa::path(
    get, path = "/v1/openapi.json", tag = "meta",
    responses((status = 200, description = "The OpenAPI 3.1 document for the mounted routes", content_type = "application/json"))
)]
pub async fn serve(State(state): State<AppState>) -> impl IntoResponse {
    (
        [(header::CONTENT_TYPE, "application/json")],
        state.settings.openapi_json().to_owned(),
    )
}

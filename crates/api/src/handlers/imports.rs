//! Import history (`/v1/people/imports`, mounted with `AGENT_MEMORY_API_ENABLED=1`;
//! `people.read`, `people.write`): the owner asks the async worker to read the mail already
//! synced in a date range again into People, within a record limit and a spending cap on the
//! memory model. Each import is a durable operation in a session of its own, which the session
//! index skips; one runs at a time, and the owner may cancel it.

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json as JsonResponse};
use domain::ErrorCode;
use domain::run::Cost;
use store::people_imports::{ImportRow, NewImport, Started};
use uuid::Uuid;
use wire::people::{PeopleImport, PeopleImports, StartImport};

use super::email::parse_uuid;
use crate::AppState;
use crate::auth::Caller;
use crate::extract::{Json, Path};
use crate::problem::ApiError;

/// The most messages one import reads.
pub const MAX_RECORD_LIMIT: u32 = 10_000;
/// The highest spending cap, in USD.
pub const MAX_SPENDING_CAP: &str = "1000";
/// The imports a listing shows.
const LISTED: u32 = 20;

fn import(row: ImportRow) -> PeopleImport {
    PeopleImport {
        import_id: row.id,
        session_id: row.session,
        since: row.since,
        until: row.until,
        record_limit: row.record_limit,
        spending_cap: row.spending_cap.to_string(),
        state: row.state,
        stop_reason: row.stop_reason,
        records_read: row.records_read,
        people_created: row.people_created,
        facts_noted: row.facts_noted,
        beliefs_formed: row.beliefs_formed,
        spent: row.spent.to_string(),
        created_at: row.created_at,
        updated_at: row.updated_at,
        finished_at: row.finished_at,
    }
}

fn import_id(text: &str) -> Result<Uuid, ApiError> {
    parse_uuid(text, ErrorCode::PeopleImportNotFound)
}

fn invalid(field: &str, detail: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::ValidationFailed).detail(detail).field(field)
}

/// Starts an import: `202` with the queued import (its `Location`); `409
/// people_import_in_progress` while another is queued or running.
#[utoipa::path(
    post, path = "/v1/people/imports", tag = "people",
    security(("bearer" = ["people.write"])),
    request_body = StartImport,
    responses((status = 202, description = "Queued; the async worker reads it", body = PeopleImport,
               headers(("Location" = String))))
)]
pub async fn start(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Json(request): Json<StartImport>,
) -> Result<Response, ApiError> {
    if request.until < request.since {
        return Err(invalid("until", "the range ends on or after its first day"));
    }
    if !(1..=MAX_RECORD_LIMIT).contains(&request.record_limit) {
        return Err(invalid("record_limit", format!("1 to {MAX_RECORD_LIMIT} messages")));
    }
    let cap = Cost::parse(request.spending_cap.trim()).map_err(|error| invalid("spending_cap", error.to_string()))?;
    let most = Cost::parse(MAX_SPENDING_CAP).unwrap_or_default();
    if cap.micros() > most.micros() {
        return Err(invalid("spending_cap", format!("at most {MAX_SPENDING_CAP}")));
    }
    let agent = state
        .settings
        .agents
        .get("default")
        .or_else(|| state.settings.agents.iter().next())
        .ok_or_else(|| ApiError::new(ErrorCode::UnknownAgent).detail("no agent is configured"))?;
    let started = state
        .store
        .imports()
        .start(&NewImport {
            principal: &caller.principal,
            agent,
            since: request.since,
            until: request.until,
            record_limit: request.record_limit,
            spending_cap: cap,
        })
        .await?;
    match started {
        Started::Started(row) => {
            tracing::info!(import = %row.id, "import queued");
            let location = format!("/v1/people/imports/{}", row.id);
            Ok((
                StatusCode::ACCEPTED,
                [(header::LOCATION, location)],
                JsonResponse(import(*row)),
            )
                .into_response())
        }
        Started::InProgress(active) => Err(ApiError::new(ErrorCode::PeopleImportInProgress).detail(format!(
            "import {active} is queued or running; cancel it or wait for it to end"
        ))),
    }
}

/// The owner's latest imports (at most 20), newest first.
#[utoipa::path(
    get, path = "/v1/people/imports", tag = "people",
    security(("bearer" = ["people.read"])),
    responses((status = 200, description = "Newest first", body = PeopleImports))
)]
pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<JsonResponse<PeopleImports>, ApiError> {
    let rows = state.store.imports().list(&caller.principal, LISTED).await?;
    Ok(JsonResponse(PeopleImports {
        imports: rows.into_iter().map(import).collect(),
    }))
}

/// An import and its progress.
#[utoipa::path(
    get, path = "/v1/people/imports/{import_id}", tag = "people",
    security(("bearer" = ["people.read"])),
    params(("import_id" = Uuid, Path)),
    responses((status = 200, description = "The import", body = PeopleImport))
)]
pub async fn get(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<JsonResponse<PeopleImport>, ApiError> {
    let id = import_id(&id)?;
    let row = state
        .store
        .imports()
        .get(&caller.principal, id)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::PeopleImportNotFound))?;
    Ok(JsonResponse(import(row)))
}

/// Cancels a queued or running import (the worker stops at its next batch; what it read
/// stays); an import that has ended is answered as it is.
#[utoipa::path(
    post, path = "/v1/people/imports/{import_id}/cancel", tag = "people",
    security(("bearer" = ["people.write"])),
    params(("import_id" = Uuid, Path)),
    responses((status = 200, description = "The import as it now is", body = PeopleImport))
)]
pub async fn cancel(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<JsonResponse<PeopleImport>, ApiError> {
    let id = import_id(&id)?;
    let row = state
        .store
        .imports()
        .cancel(&caller.principal, id)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::PeopleImportNotFound))?;
    Ok(JsonResponse(import(row)))
}

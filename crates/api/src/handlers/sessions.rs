//! Sessions: create, index, point read, file into a folder, delete.

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json as JsonResponse};
use domain::ErrorCode;
use domain::cursor::CursorKind;
use domain::ids::{DraftId, FolderId, SessionId};
use domain::session::SessionMetadata;
use serde_json::Value;
use store::{DeleteSession, FileSession, NewSession, SessionRow};
use wire::request::{CreateSession, ListSessions, UpdateSession};
use wire::response::{Session, SessionPage, SessionSummary};

use super::parse_id;
use crate::AppState;
use crate::auth::Caller;
use crate::extract::{Json, Path, Query};
use crate::problem::ApiError;

pub const DEFAULT_PAGE_SIZE: u32 = 50;
pub const MAX_PAGE_SIZE: u32 = 200;

/// The index row of a stored session.
pub(crate) fn summary(row: SessionRow) -> SessionSummary {
    SessionSummary {
        session_id: row.id.as_uuid(),
        title: row.title,
        agent_id: row.agent_id,
        agent_version: row.agent_version.as_str().to_owned(),
        folder_id: row.folder_id.map(|id| id.as_uuid()),
        schedule_id: row.schedule_id.map(|id| id.as_uuid()),
        last_run_id: row.last_run_id.map(|id| id.as_uuid()),
        created_at: row.created_at,
        updated_at: row.updated_at,
    }
}

/// A stored session as the API shows it.
pub(crate) fn session(mut row: SessionRow) -> Session {
    let metadata = match std::mem::take(&mut row.metadata) {
        Value::Object(members) => members,
        _ => serde_json::Map::new(),
    };
    let browser_profile_id = row.browser_profile_id;
    Session {
        summary: summary(row),
        metadata,
        draft_id: None,
        browser_profile_id,
    }
}

/// Creates a session pinned to the agent's current version.
#[utoipa::path(
    post, path = "/v1/sessions", tag = "sessions",
    security(("bearer" = ["sessions.write"])),
    request_body = CreateSession,
    responses(
        (status = 201, description = "Created", body = Session, headers(("Location" = String))),
    )
)]
pub async fn create(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Json(body): Json<CreateSession>,
) -> Result<Response, ApiError> {
    let agent = state.settings.agents.get(&body.agent_id).ok_or_else(|| {
        ApiError::new(ErrorCode::UnknownAgent).detail(format!("no agent `{}` is configured", body.agent_id))
    })?;
    let metadata = SessionMetadata::parse(Value::Object(body.metadata.unwrap_or_default())).map_err(|error| {
        ApiError::new(ErrorCode::ValidationFailed)
            .detail(error.to_string())
            .field("metadata")
    })?;
    let browser_profile = match body.browser_profile_id {
        None => None,
        // Without Website Access no profile can be named (none can be made).
        Some(_) if !state.settings.flags.is_on(domain::flags::Flag::Browser) => {
            return Err(ApiError::new(ErrorCode::BrowserProfileNotFound).field("browser_profile_id"));
        }
        Some(id) => match state.store.browser_profile(&caller.principal, id).await? {
            None => return Err(ApiError::new(ErrorCode::BrowserProfileNotFound).field("browser_profile_id")),
            Some(row) if row.state != store::ProfileState::Ready => {
                return Err(ApiError::new(ErrorCode::BrowserProfileNotReady)
                    .detail("only a signed-in (READY) profile can be chosen for a conversation")
                    .field("browser_profile_id"));
            }
            Some(row) => Some(row.id),
        },
    };
    let row = state
        .store
        .create_session(NewSession {
            principal: &caller.principal,
            agent,
            title: metadata.title(),
            metadata: metadata.into_value(),
            browser_profile,
        })
        .await?;
    let location = format!("/v1/sessions/{}", row.id);
    Ok((
        StatusCode::CREATED,
        [(header::LOCATION, location)],
        JsonResponse(session(row)),
    )
        .into_response())
}

/// The session index, in creation order (oldest first), so a client following cursors to the end
/// also sees sessions created while it pages. Cursors are opaque and tamper-evident.
#[utoipa::path(
    get, path = "/v1/sessions", tag = "sessions",
    security(("bearer" = ["sessions.read"])),
    params(ListSessions),
    responses(
        (status = 200, description = "One page of the index", body = SessionPage),
    )
)]
pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Query(params): Query<ListSessions>,
) -> Result<JsonResponse<SessionPage>, ApiError> {
    let limit = super::page_limit(params.limit, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)?;
    // An empty `cursor=` is no cursor: the first page.
    let after = match params.cursor.as_deref().filter(|cursor| !cursor.is_empty()) {
        None => None,
        Some(cursor) => Some(
            state
                .settings
                .cursors
                .decode(CursorKind::Sessions, cursor)
                .map_err(|error| ApiError::new(ErrorCode::InvalidCursor).detail(error.to_string()))?,
        ),
    };
    let page = state.store.session_page(&caller.principal, after, limit).await?;
    let next_cursor = match page.rows.last() {
        Some(last) if page.more => Some(state.settings.cursors.encode(CursorKind::Sessions, last.index_position)),
        _ => None,
    };
    Ok(JsonResponse(SessionPage {
        sessions: page.rows.into_iter().map(summary).collect(),
        next_cursor,
    }))
}

/// Reads one session. A draft's send session names the draft it sends (`draft_id`).
#[utoipa::path(
    get, path = "/v1/sessions/{session_id}", tag = "sessions",
    security(("bearer" = ["sessions.read"])),
    params(("session_id" = Uuid, Path)),
    responses(
        (status = 200, description = "The session", body = Session),
    )
)]
pub async fn get(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(session_id): Path<String>,
) -> Result<JsonResponse<Session>, ApiError> {
    let id = parse_id(&session_id, SessionId::parse, ErrorCode::SessionNotFound)?;
    let row = state
        .store
        .session(&caller.principal, id)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::SessionNotFound))?;
    let mut answer = session(row);
    answer.draft_id = state.store.email().send_session_draft(id).await?.map(DraftId::as_uuid);
    Ok(JsonResponse(answer))
}

/// Moves a session into a folder, or back to the history with `"folder_id": null`. Scheduled
/// sessions never enter a folder.
#[utoipa::path(
    patch, path = "/v1/sessions/{session_id}", tag = "sessions",
    security(("bearer" = ["sessions.write"])),
    params(("session_id" = Uuid, Path)),
    request_body = UpdateSession,
    responses(
        (status = 200, description = "The updated session", body = Session),
    )
)]
pub async fn update(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(session_id): Path<String>,
    Json(body): Json<UpdateSession>,
) -> Result<JsonResponse<Session>, ApiError> {
    let id = parse_id(&session_id, SessionId::parse, ErrorCode::SessionNotFound)?;
    let Some(folder) = body.folder_id else {
        return Err(ApiError::new(ErrorCode::ValidationFailed)
            .detail("folder_id is required: a folder id, or null to unfile")
            .field("folder_id"));
    };
    match state
        .store
        .file_session(&caller.principal, id, folder.map(FolderId::from_uuid))
        .await?
    {
        FileSession::Filed(row) => Ok(JsonResponse(session(*row))),
        FileSession::SessionNotFound => Err(ApiError::new(ErrorCode::SessionNotFound)),
        FileSession::FolderNotFound => Err(ApiError::new(ErrorCode::UnknownFolder)
            .detail("no folder has this id")
            .field("folder_id")),
        FileSession::Scheduled => Err(ApiError::new(ErrorCode::ScheduledSessionNotFileable)
            .detail("sessions started by a schedule stay out of folders")),
    }
}

/// Deletes a session and everything in it, irreversibly. Refused while a run is active; a repeat
/// delete of a session this principal deleted succeeds.
#[utoipa::path(
    delete, path = "/v1/sessions/{session_id}", tag = "sessions",
    security(("bearer" = ["sessions.write"])),
    params(("session_id" = Uuid, Path)),
    responses(
        (status = 204, description = "Deleted (or already deleted by this principal)"),
    )
)]
pub async fn delete(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(session_id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let id = parse_id(&session_id, SessionId::parse, ErrorCode::SessionNotFound)?;
    match state.store.delete_session(&caller.principal, id).await? {
        DeleteSession::Deleted | DeleteSession::AlreadyDeleted => Ok(StatusCode::NO_CONTENT),
        DeleteSession::NotFound => Err(ApiError::new(ErrorCode::SessionNotFound)),
        DeleteSession::ActiveRun(run) => Err(ApiError::new(ErrorCode::SessionHasActiveRun)
            .detail("cancel the active run or wait for it to finish before deleting")
            .run_id(run)),
    }
}

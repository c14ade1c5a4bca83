//! The owner's calls (`/v1/calls`, mounted with `AGENT_CALL_ENABLED=1`): the list (keyset
//! cursors, newest first), one call with its brief, transcript and summary (the owner's only),
//! cancelling an approved outbound call before the call worker dispatches it, and deleting a
//! call. Deleting removes the transcript, summary, brief and number at once and hides the call;
//! the call worker then redacts what was derived from it. The API never talks to the call
//! provider.

use axum::extract::State;
use axum::http::StatusCode;
use axum::{Extension, Json as JsonResponse};
use domain::ErrorCode;
use domain::cursor::CursorKind;
use serde_json::Value;
use store::{CallRow, CancelCall, DeleteCall};
use uuid::Uuid;
use wire::calls::{Call, CallBrief, CallPage, CallSummary, ListCalls, Speaker, TranscriptTurn};

use super::email::{page_after, parse_uuid};
use crate::AppState;
use crate::auth::Caller;
use crate::extract::{Path, Query};
use crate::problem::ApiError;

const DEFAULT_PAGE_SIZE: u32 = 50;
const MAX_PAGE_SIZE: u32 = 100;

fn encode_position(row: &CallRow) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(24);
    bytes.extend_from_slice(&row.created_at.as_microsecond().to_be_bytes());
    bytes.extend_from_slice(row.id.as_bytes());
    bytes
}

fn decode_position(bytes: &[u8]) -> Option<(jiff::Timestamp, Uuid)> {
    let micros = i64::from_be_bytes(bytes.get(..8)?.try_into().ok()?);
    let id = Uuid::from_slice(bytes.get(8..)?).ok()?;
    Some((jiff::Timestamp::from_microsecond(micros).ok()?, id))
}

fn summary(row: &CallRow) -> CallSummary {
    CallSummary {
        call_id: row.id,
        direction: row.direction,
        state: row.state,
        counterpart: row.counterpart.clone(),
        created_at: row.created_at,
        dispatched_at: row.dispatched_at,
        finished_at: row.finished_at,
        duration_seconds: row.duration_seconds,
        failure: row.failure,
        expired: row.expired_at.is_some(),
    }
}

fn brief(value: &Value) -> Option<CallBrief> {
    let text = |name: &str| value.get(name).and_then(Value::as_str).map(str::to_owned);
    Some(CallBrief {
        to: text("to")?,
        purpose: text("purpose")?,
        may_say: text("may_say")?,
        voicemail_message: text("voicemail_message"),
    })
}

/// The provider's turns (`user` is the other person) as the wire names speakers.
fn transcript(value: &Value) -> Option<Vec<TranscriptTurn>> {
    let turns = value.as_array()?;
    Some(
        turns
            .iter()
            .filter_map(|turn| {
                let text = turn.get("text")?.as_str()?.to_owned();
                let speaker = match turn.get("user").and_then(Value::as_str) {
                    Some("assistant" | "agent-action") => Speaker::Assistant,
                    _ => Speaker::Other,
                };
                Some(TranscriptTurn { speaker, text })
            })
            .collect(),
    )
}

fn call_id(text: &str) -> Result<Uuid, ApiError> {
    parse_uuid(text, ErrorCode::CallNotFound)
}

/// The owner's calls, newest first, paged by cursor.
#[utoipa::path(
    get, path = "/v1/calls", tag = "calls",
    security(("bearer" = ["call.read"])),
    params(ListCalls),
    responses((status = 200, description = "A page of calls", body = CallPage))
)]
pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Query(params): Query<ListCalls>,
) -> Result<JsonResponse<CallPage>, ApiError> {
    let limit = super::page_limit(params.limit, DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE)?;
    let after = page_after(&state, CursorKind::Calls, params.cursor.as_deref(), decode_position)?;
    let mut rows = state
        .store
        .list_calls(&caller.principal, after, i64::from(limit) + 1)
        .await?;
    let next_cursor = super::next_page(&state, CursorKind::Calls, &mut rows, limit, encode_position);
    Ok(JsonResponse(CallPage {
        calls: rows.iter().map(summary).collect(),
        next_cursor,
    }))
}

/// One call: its brief (outbound), transcript and summary (gone once expired).
#[utoipa::path(
    get, path = "/v1/calls/{call_id}", tag = "calls",
    security(("bearer" = ["call.read"])),
    params(("call_id" = Uuid, Path)),
    responses((status = 200, description = "The call", body = Call))
)]
pub async fn get(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<JsonResponse<Call>, ApiError> {
    let id = call_id(&id)?;
    let row = state
        .store
        .call(&caller.principal, id)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::CallNotFound))?;
    Ok(JsonResponse(Call {
        call: summary(&row),
        brief: row.brief.as_ref().and_then(brief),
        revision: row.revision.clone(),
        session_id: row.session_id,
        answered_by: row.answered_by.clone(),
        transcript: row.transcript.as_ref().and_then(transcript),
        summary: row.summary.clone(),
    }))
}

/// Cancels an approved outbound call the call worker has not begun to dispatch; its
/// reservation is released.
#[utoipa::path(
    post, path = "/v1/calls/{call_id}/cancel", tag = "calls",
    security(("bearer" = ["call.cancel"])),
    params(("call_id" = Uuid, Path)),
    responses((status = 204, description = "Cancelled"))
)]
pub async fn cancel(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let id = call_id(&id)?;
    match state.store.cancel_call(&caller.principal, id).await? {
        CancelCall::Cancelled => Ok(StatusCode::NO_CONTENT),
        CancelCall::NotFound => Err(ApiError::new(ErrorCode::CallNotFound)),
        CancelCall::TooLate(call_state) => Err(ApiError::new(ErrorCode::CallNotCancellable).detail(format!(
            "the call is {}; only an approved call not yet dispatched can be cancelled",
            call_state.as_str()
        ))),
    }
}

/// Deletes a call: its transcript, summary, brief and number go at once, and what was derived
/// from it (tool results, later generated replies) is redacted by the call worker; the owner's
/// own messages stay. Refused while the call is in progress or a run that used it is active.
#[utoipa::path(
    delete, path = "/v1/calls/{call_id}", tag = "calls",
    security(("bearer" = ["call.delete"])),
    params(("call_id" = Uuid, Path)),
    responses((status = 204, description = "Deleted"))
)]
pub async fn delete(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(id): Path<String>,
) -> Result<StatusCode, ApiError> {
    let id = call_id(&id)?;
    match state.store.delete_call(&caller.principal, id).await? {
        DeleteCall::Deleted => Ok(StatusCode::NO_CONTENT),
        DeleteCall::NotFound => Err(ApiError::new(ErrorCode::CallNotFound)),
        DeleteCall::Active => Err(ApiError::new(ErrorCode::CallActive)
            .detail("the call is in progress or a run that used it is active; try again when it has ended")),
    }
}

//! Message submit (which starts a run), run reads and run cancel.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::{Extension, Json as JsonResponse};
use domain::ErrorCode;
use domain::idempotency::IdempotencyKey;
use domain::ids::{RunId, SessionId};
use domain::session::TITLE_MAX_CHARS;
use sha2::{Digest, Sha256};
use store::{CancelRun, IdempotencyClaim, NewMessage, Prior, RunRow, StoredResponse, Submit};

use super::parse_id;
use crate::AppState;
use crate::auth::Caller;
use crate::extract::{Json, Path};
use crate::problem::ApiError;

use domain::run::UserMessage;
use wire::request::SubmitMessage;
use wire::response::{Accepted, Run, RunLimits, RunStatus};
pub const IDEMPOTENCY_HEADER: &str = "idempotency-key";
/// Set on a response that replays the one first given for the same idempotency key.
pub const REPLAYED_HEADER: &str = "idempotent-replayed";

/// A stored run as the API shows it.
pub(crate) fn run(row: &RunRow) -> Run {
    Run {
        run_id: row.id.as_uuid(),
        session_id: row.session_id.as_uuid(),
        state: row.state,
        status: RunStatus::from(row.state),
        reason: row.outcome_reason.clone(),
        message_seq: row.message_seq,
        limits: RunLimits {
            max_steps: row.limits.max_steps,
            max_model_calls: row.limits.max_model_calls,
            max_tool_calls: row.limits.max_tool_calls,
            max_cost: row.limits.max_cost.to_string(),
            run_timeout_seconds: row.limits.run_timeout_seconds,
        },
        deadline_at: row.deadline_at,
        created_at: row.created_at,
        updated_at: row.updated_at,
        finished_at: row.finished_at,
    }
}

pub(crate) fn idempotency_key(headers: &HeaderMap) -> Result<IdempotencyKey, ApiError> {
    let value = headers.get(IDEMPOTENCY_HEADER).ok_or_else(|| {
        ApiError::new(ErrorCode::IdempotencyKeyRequired)
            .detail("send an Idempotency-Key header, reused unchanged when retrying this request")
    })?;
    value
        .to_str()
        .ok()
        .and_then(|text| IdempotencyKey::parse(text).ok())
        .ok_or_else(|| {
            ApiError::new(ErrorCode::InvalidRequest).detail("Idempotency-Key must be 1 to 255 visible ASCII characters")
        })
}

/// The digest an idempotency key's request is matched by: SHA-256 of the request's canonical JSON.
pub(crate) fn request_hash(request: &impl serde::Serialize) -> Result<String, ApiError> {
    let canonical = serde_json::to_vec(request).map_err(|error| ApiError::from(store::StoreError::Encode(error)))?;
    Ok(Sha256::digest(&canonical).iter().map(|b| format!("{b:02x}")).collect())
}

/// The answer to a request whose idempotency key was used before.
pub(crate) fn earlier(prior: Prior) -> Result<Response, ApiError> {
    match prior {
        Prior::Replay(response) => Ok(replay(response, true)),
        Prior::KeyReused => Err(ApiError::new(ErrorCode::IdempotencyKeyReused)
            .detail("this Idempotency-Key was used for a different request; use a new key for a new request")),
        Prior::KeyInFlight => Err(ApiError::new(ErrorCode::IdempotencyKeyInFlight)
            .detail("a request with this Idempotency-Key is still being processed; retry shortly")),
    }
}

/// A stored idempotent response, marked when it replays the first one.
pub(crate) fn replay(response: StoredResponse, replayed: bool) -> Response {
    let status = StatusCode::from_u16(response.status).unwrap_or(StatusCode::OK);
    let mut answer = (status, [(header::CONTENT_TYPE, "application/json")], response.body).into_response();
    if replayed {
        answer
            .headers_mut()
            .insert(REPLAYED_HEADER, HeaderValue::from_static("true"));
    }
    answer
}

/// Submits a message to a session, starting one run. Requires `Idempotency-Key`: a retry with
/// the same key and body gets the original response byte for byte (and `Idempotent-Replayed:
/// true`) and starts nothing.
#[utoipa::path(
    post, path = "/v1/sessions/{session_id}/messages", tag = "runs",
    security(("bearer" = ["sessions.write"])),
    params(("session_id" = Uuid, Path),
           ("Idempotency-Key" = String, Header, description = "The client's stable name for this message")),
    request_body = SubmitMessage,
    responses(
        (status = 202, description = "Accepted: the message is stored and its run queued", body = Accepted),
    )
)]
pub async fn submit(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(session_id): Path<String>,
    headers: HeaderMap,
    Json(body): Json<SubmitMessage>,
) -> Result<Response, ApiError> {
    let session = parse_id(&session_id, SessionId::parse, ErrorCode::SessionNotFound)?;
    let key = idempotency_key(&headers)?;
    let message = UserMessage::try_from(body.clone())?;
    let text = message.text.as_deref();
    // The request as the key must match it: its session and canonical body.
    let request_hash = request_hash(&(session.to_string(), &body))?;
    let title = text
        .and_then(|text| text.lines().map(str::trim).find(|line| !line.is_empty()))
        .map(|line| line.chars().take(TITLE_MAX_CHARS).collect());

    let outcome = state
        .store
        .submit_message(
            NewMessage {
                // The model settings in force now apply to this message's run.
                models: &state.settings.offered_models,
                principal: &caller.principal,
                session,
                text,
                attachments: &message.attachments,
                limits: state.settings.run_limits,
                title,
                idempotency: IdempotencyClaim {
                    key: &key,
                    operation: "message.submit",
                    request_hash: &request_hash,
                },
            },
            |run| StoredResponse::json(StatusCode::ACCEPTED.as_u16(), &Accepted { run: self::run(run) }),
        )
        .await?;
    match outcome {
        Submit::Accepted { response, run, .. } => {
            tracing::info!(run_id = %run.id, session_id = %session, "message accepted; its run is queued");
            Ok(replay(response, false))
        }
        Submit::Earlier(prior) => earlier(prior),
        Submit::SessionNotFound => Err(ApiError::new(ErrorCode::SessionNotFound)),
        Submit::UnknownArtifact(id) => Err(ApiError::new(ErrorCode::UnknownArtifact)
            .detail(format!("artifact {id} is not in this session"))
            .field("attachments")),
        Submit::ActiveRun(run) => Err(ApiError::new(ErrorCode::ActiveRunExists)
            .detail("the session has an active run; attach to it instead of submitting")
            .run_id(run)),
    }
}

/// Reads a run.
#[utoipa::path(
    get, path = "/v1/runs/{run_id}", tag = "runs",
    security(("bearer" = ["sessions.read"])),
    params(("run_id" = Uuid, Path)),
    responses(
        (status = 200, description = "The run", body = Run),
    )
)]
pub async fn get(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(run_id): Path<String>,
) -> Result<JsonResponse<Run>, ApiError> {
    let id = parse_id(&run_id, RunId::parse, ErrorCode::RunNotFound)?;
    let row = state
        .store
        .run(&caller.principal, id)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::RunNotFound))?;
    Ok(JsonResponse(run(&row)))
}

/// Cancels an active run: it ends `cancelled` with reason `requested`, and the session's event
/// stream delivers `run.cancelled` and closes.
#[utoipa::path(
    post, path = "/v1/runs/{run_id}/cancel", tag = "runs",
    security(("bearer" = ["sessions.write"])),
    params(("run_id" = Uuid, Path)),
    responses(
        (status = 200, description = "Cancelled", body = Run),
    )
)]
pub async fn cancel(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(run_id): Path<String>,
) -> Result<JsonResponse<Run>, ApiError> {
    let id = parse_id(&run_id, RunId::parse, ErrorCode::RunNotFound)?;
    match state.store.cancel_run(&caller.principal, id).await? {
        CancelRun::Cancelled(row) => Ok(JsonResponse(run(row.as_ref()))),
        CancelRun::NotActive(row) => Err(ApiError::new(ErrorCode::RunNotActive)
            .detail(format!("the run already ended {}", row.state.as_str()))
            .state(row.state)),
        CancelRun::NotFound => Err(ApiError::new(ErrorCode::RunNotFound)),
    }
}

//! Schedules: create (idempotent, every field validated), list, read, occurrences, cancel.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::{Extension, Json as JsonResponse};
use domain::ErrorCode;
use domain::ids::ScheduleId;
use store::{
    CancelSchedule, CreateSchedule, IdempotencyClaim, NewSchedule, OccurrenceRow, ScheduleRow, StoredResponse,
};
use wire::request::{
    Cadence, CadenceKind, CancelSchedule as CancelParams, ListSchedules, ScheduleDefinition, ScheduleLimits,
};
use wire::response::{Occurrence, OccurrenceList, Schedule, ScheduleEnvelope, ScheduleList, ScheduleState};

use super::parse_id;
use super::runs::{earlier, idempotency_key, replay};
use crate::AppState;
use crate::auth::Caller;
use crate::extract::{Json, Path, Query};
use crate::problem::ApiError;

fn schedule(row: &ScheduleRow) -> Schedule {
    Schedule {
        id: row.id.as_uuid(),
        revision: row.revision,
        title: row.title.clone(),
        instruction: row.instruction.clone(),
        agent_id: row.agent_id.clone(),
        agent_version: row.agent_version.clone(),
        policy_profile: row.policy_profile.clone(),
        requested_scopes: row.requested_scopes.clone(),
        limits: ScheduleLimits {
            max_steps: row.limits.max_steps,
            max_model_calls: row.limits.max_model_calls,
            max_tool_calls: row.limits.max_tool_calls,
            max_cost: row.limits.max_cost.to_string(),
        },
        run_timeout_seconds: row.limits.run_timeout_seconds,
        wait_timeout_seconds: row.wait_timeout_seconds,
        cadence: Cadence {
            kind: CadenceKind::Daily,
            local_time: row.local_time.clone(),
            timezone: row.timezone.clone(),
        },
        misfire_grace_seconds: row.misfire_grace_seconds,
        max_consecutive_failures: row.max_consecutive_failures,
        state: row.state,
        consecutive_failures: row.consecutive_failures,
        next_fire_at: row.next_fire_at,
        created_at: row.created_at,
        updated_at: row.updated_at,
        cancelled_at: row.cancelled_at,
    }
}

fn occurrence(row: &OccurrenceRow) -> Occurrence {
    Occurrence {
        occurrence_id: row.id,
        scheduled_for: row.scheduled_for,
        schedule_revision: row.schedule_revision,
        state: row.state,
        reason: row.reason.clone(),
        session_id: row.session_id.map(|id| id.as_uuid()),
        run_id: row.run_id.map(|id| id.as_uuid()),
        created_at: row.created_at,
    }
}

/// Creates a schedule (revision 1) from the schedule definition. Requires `Idempotency-Key`.
/// Every field is validated; a failure names it in `field`. `agent_id` and `agent_version` must
/// name a version a session was created with; the schedule pins it.
#[utoipa::path(
    post, path = "/v1/schedules", tag = "schedules",
    security(("bearer" = ["schedules.write"])),
    params(("Idempotency-Key" = String, Header, description = "The client's stable name for this schedule")),
    request_body = ScheduleDefinition,
    responses(
        (status = 201, description = "Created", body = ScheduleEnvelope),
    )
)]
pub async fn create(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    Json(body): Json<ScheduleDefinition>,
) -> Result<Response, ApiError> {
    let key = idempotency_key(&headers)?;
    let request_hash = super::runs::request_hash(&body)?;
    let definition = domain::schedule::ScheduleSpec::try_from(body)?;
    let next_fire_at = definition.cadence.next_after(jiff::Timestamp::now());
    let outcome = state
        .store
        .create_schedule(
            NewSchedule {
                principal: &caller.principal,
                title: &definition.title,
                instruction: &definition.instruction,
                agent_id: &definition.agent_id,
                agent_version: &definition.agent_version,
                policy_profile: "default",
                requested_scopes: &definition.requested_scopes,
                limits: definition.limits,
                wait_timeout_seconds: definition.wait_timeout_seconds,
                local_time: &definition.local_time,
                timezone: &definition.timezone,
                misfire_grace_seconds: definition.misfire_grace_seconds,
                max_consecutive_failures: definition.max_consecutive_failures,
                next_fire_at,
                idempotency: IdempotencyClaim {
                    key: &key,
                    operation: "schedule.create",
                    request_hash: &request_hash,
                },
            },
            |row| {
                StoredResponse::json(
                    StatusCode::CREATED.as_u16(),
                    &ScheduleEnvelope {
                        schedule: schedule(row),
                    },
                )
            },
        )
        .await?;
    match outcome {
        CreateSchedule::Created { response, .. } => Ok(replay(response, false)),
        CreateSchedule::Earlier(prior) => earlier(prior),
        CreateSchedule::UnknownAgentVersion => Err(ApiError::new(ErrorCode::UnknownAgentVersion)
            .detail("no session was created with this agent id and version; take both from a fresh session")
            .field("agent_version")),
    }
}

/// Lists schedules, oldest first: active and stopped ones, and with `include_cancelled=true`
/// cancelled ones too (a cancelled schedule stays readable: it is the owner's record of what it
/// did).
#[utoipa::path(
    get, path = "/v1/schedules", tag = "schedules",
    security(("bearer" = ["schedules.read"])),
    params(ListSchedules),
    responses((status = 200, description = "Every schedule not cancelled, or every schedule when asked", body = ScheduleList))
)]
pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Query(params): Query<ListSchedules>,
) -> Result<JsonResponse<ScheduleList>, ApiError> {
    let include_cancelled = params.include_cancelled.unwrap_or(false);
    let rows = state.store.schedules(&caller.principal).await?;
    Ok(JsonResponse(ScheduleList {
        schedules: rows
            .into_iter()
            .filter(|row| include_cancelled || row.state != ScheduleState::Cancelled)
            .map(|row| schedule(&row))
            .collect(),
    }))
}

/// Reads a schedule, cancelled ones included (their state says so).
#[utoipa::path(
    get, path = "/v1/schedules/{schedule_id}", tag = "schedules",
    security(("bearer" = ["schedules.read"])),
    params(("schedule_id" = Uuid, Path)),
    responses(
        (status = 200, description = "The schedule", body = ScheduleEnvelope),
    )
)]
pub async fn get(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(schedule_id): Path<String>,
) -> Result<JsonResponse<ScheduleEnvelope>, ApiError> {
    let id = parse_id(&schedule_id, ScheduleId::parse, ErrorCode::ScheduleNotFound)?;
    let row = state
        .store
        .schedule(&caller.principal, id)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::ScheduleNotFound))?;
    Ok(JsonResponse(ScheduleEnvelope {
        schedule: schedule(&row),
    }))
}

/// The schedule's occurrences, newest first, each linking to the run it started (a cancelled
/// schedule's too).
#[utoipa::path(
    get, path = "/v1/schedules/{schedule_id}/occurrences", tag = "schedules",
    security(("bearer" = ["schedules.read"])),
    params(("schedule_id" = Uuid, Path)),
    responses(
        (status = 200, description = "Occurrences", body = OccurrenceList),
    )
)]
pub async fn occurrences(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(schedule_id): Path<String>,
) -> Result<JsonResponse<OccurrenceList>, ApiError> {
    let id = parse_id(&schedule_id, ScheduleId::parse, ErrorCode::ScheduleNotFound)?;
    let (_, rows) = state
        .store
        .occurrences(&caller.principal, id)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::ScheduleNotFound))?;
    Ok(JsonResponse(OccurrenceList {
        occurrences: rows.iter().map(occurrence).collect(),
    }))
}

/// Cancels a schedule at `expected_revision`; it never fires again. Another revision → 409.
#[utoipa::path(
    delete, path = "/v1/schedules/{schedule_id}", tag = "schedules",
    security(("bearer" = ["schedules.write"])),
    params(("schedule_id" = Uuid, Path), CancelParams),
    responses(
        (status = 200, description = "Cancelled (revision increased)", body = ScheduleEnvelope),
    )
)]
pub async fn cancel(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(schedule_id): Path<String>,
    Query(params): Query<CancelParams>,
) -> Result<JsonResponse<ScheduleEnvelope>, ApiError> {
    let id = parse_id(&schedule_id, ScheduleId::parse, ErrorCode::ScheduleNotFound)?;
    let expected = params.expected_revision;
    match state.store.cancel_schedule(&caller.principal, id, expected).await? {
        CancelSchedule::Cancelled(row) => Ok(JsonResponse(ScheduleEnvelope {
            schedule: schedule(row.as_ref()),
        })),
        CancelSchedule::RevisionMismatch(row) => Err(ApiError::new(ErrorCode::RevisionMismatch)
            .detail(format!("the schedule is at revision {}", row.revision))
            .revision(row.revision)),
        CancelSchedule::NotFound => Err(ApiError::new(ErrorCode::ScheduleNotFound)),
    }
}

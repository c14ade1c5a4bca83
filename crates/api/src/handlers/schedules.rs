//! Schedules: create (idempotent, every field validated), list, read, occurrences, cancel.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::Response;
use axum::{Extension, Json as JsonResponse};
use domain::ErrorCode;
use domain::cadence::{Daily, SCHEDULE_SCOPES, parse_local_time};
use domain::ids::ScheduleId;
use domain::run::{Cost, RunLimits};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value, json};
use sha2::{Digest, Sha256};
use store::{
    CancelSchedule, CreateSchedule, IdempotencyClaim, NewSchedule, OccurrenceRow, ScheduleRow, StoredResponse,
};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use super::parse_id;
use super::runs::{earlier, idempotency_key, replay};
use crate::AppState;
use crate::auth::Caller;
use crate::extract::{Path, Query};
use crate::problem::ApiError;

/// A schedule as the API shows it (wrapped as `{"schedule": …}`).
#[derive(Serialize, ToSchema)]
pub struct Schedule {
    id: Uuid,
    /// Starts at 1; cancelling increases it.
    revision: i32,
    title: String,
    instruction: String,
    agent_id: String,
    agent_version: String,
    policy_profile: String,
    requested_scopes: Vec<String>,
    #[schema(value_type = Object)]
    limits: Value,
    run_timeout_seconds: u32,
    #[schema(value_type = Object)]
    cadence: Value,
    misfire_grace_seconds: i32,
    max_consecutive_failures: i32,
    /// `active`, `cancelled`, or `stopped` after `max_consecutive_failures` failed runs in a row.
    state: String,
    consecutive_failures: i32,
    #[schema(value_type = Option<String>, format = DateTime)]
    next_fire_at: Option<jiff::Timestamp>,
    #[schema(value_type = String, format = DateTime)]
    created_at: jiff::Timestamp,
    #[schema(value_type = String, format = DateTime)]
    updated_at: jiff::Timestamp,
    #[schema(value_type = Option<String>, format = DateTime)]
    cancelled_at: Option<jiff::Timestamp>,
}

impl From<&ScheduleRow> for Schedule {
    fn from(row: &ScheduleRow) -> Self {
        Schedule {
            id: row.id.as_uuid(),
            revision: row.revision,
            title: row.title.clone(),
            instruction: row.instruction.clone(),
            agent_id: row.agent_id.clone(),
            agent_version: row.agent_version.clone(),
            policy_profile: row.policy_profile.clone(),
            requested_scopes: row.requested_scopes.clone(),
            limits: json!({
                "max_steps": row.limits.max_steps,
                "max_model_calls": row.limits.max_model_calls,
                "max_tool_calls": row.limits.max_tool_calls,
                "max_cost": row.limits.max_cost.to_string(),
            }),
            run_timeout_seconds: row.limits.run_timeout_seconds,
            cadence: json!({ "kind": "DAILY", "local_time": row.local_time, "timezone": row.timezone }),
            misfire_grace_seconds: row.misfire_grace_seconds,
            max_consecutive_failures: row.max_consecutive_failures,
            state: row.state.clone(),
            consecutive_failures: row.consecutive_failures,
            next_fire_at: row.next_fire_at,
            created_at: row.created_at,
            updated_at: row.updated_at,
            cancelled_at: row.cancelled_at,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct ScheduleEnvelope {
    schedule: Schedule,
}

#[derive(Serialize, ToSchema)]
pub struct ScheduleList {
    schedules: Vec<Schedule>,
}

#[derive(Serialize, ToSchema)]
pub struct Occurrence {
    occurrence_id: Uuid,
    #[schema(value_type = String, format = DateTime)]
    scheduled_for: jiff::Timestamp,
    /// The schedule revision that fired.
    schedule_revision: i32,
    /// `started`, `skipped`, `completed`, `failed` or `cancelled`.
    state: String,
    /// Why it was skipped or failed (e.g. `misfire`, `schedule.authorization_failed`).
    reason: Option<String>,
    session_id: Option<Uuid>,
    /// The run it started.
    run_id: Option<Uuid>,
    #[schema(value_type = String, format = DateTime)]
    created_at: jiff::Timestamp,
}

impl From<&OccurrenceRow> for Occurrence {
    fn from(row: &OccurrenceRow) -> Self {
        Occurrence {
            occurrence_id: row.id,
            scheduled_for: row.scheduled_for,
            schedule_revision: row.schedule_revision,
            state: row.state.clone(),
            reason: row.reason.clone(),
            session_id: row.session_id.map(|id| id.as_uuid()),
            run_id: row.run_id.map(|id| id.as_uuid()),
            created_at: row.created_at,
        }
    }
}

#[derive(Serialize, ToSchema)]
pub struct OccurrenceList {
    occurrences: Vec<Occurrence>,
}

fn invalid(field: &str, detail: impl Into<String>) -> ApiError {
    ApiError::new(ErrorCode::ValidationFailed)
        .detail(detail)
        .member("field", field)
}

/// Refuses members outside `allowed`, naming the first stranger.
fn only(object: &Map<String, Value>, prefix: &str, allowed: &[&str]) -> Result<(), ApiError> {
    match object.keys().find(|key| !allowed.contains(&key.as_str())) {
        Some(key) => Err(invalid(
            &format!("{prefix}{key}"),
            format!("unknown field `{prefix}{key}`"),
        )),
        None => Ok(()),
    }
}

fn object<'a>(parent: &'a Map<String, Value>, name: &str, field: &str) -> Result<&'a Map<String, Value>, ApiError> {
    parent
        .get(name)
        .and_then(Value::as_object)
        .ok_or_else(|| invalid(field, format!("`{field}` must be an object")))
}

fn text<'a>(parent: &'a Map<String, Value>, name: &str, field: &str, max_chars: usize) -> Result<&'a str, ApiError> {
    let value = parent
        .get(name)
        .and_then(Value::as_str)
        .map(str::trim)
        .unwrap_or_default();
    if value.is_empty() || value.chars().count() > max_chars {
        return Err(invalid(
            field,
            format!("`{field}` must be a string of 1 to {max_chars} characters"),
        ));
    }
    Ok(value)
}

/// An integer of at least `min`.
fn integer(parent: &Map<String, Value>, name: &str, field: &str, min: u32) -> Result<u32, ApiError> {
    parent
        .get(name)
        .and_then(Value::as_u64)
        .and_then(|value| u32::try_from(value).ok())
        .filter(|value| *value >= min && *value <= i32::MAX as u32)
        .ok_or_else(|| invalid(field, format!("`{field}` must be an integer of at least {min}")))
}

/// A validated definition, ready to store.
struct Definition {
    title: String,
    instruction: String,
    agent_id: String,
    agent_version: String,
    requested_scopes: Vec<String>,
    limits: RunLimits,
    local_time: String,
    timezone: String,
    misfire_grace_seconds: u32,
    max_consecutive_failures: u32,
    next_fire_at: jiff::Timestamp,
}

fn validate(body: &Value) -> Result<Definition, ApiError> {
    let body = body
        .as_object()
        .ok_or_else(|| invalid("", "the body must be a JSON object"))?;
    only(
        body,
        "",
        &[
            "title",
            "instruction",
            "agent_id",
            "agent_version",
            "policy_profile",
            "requested_scopes",
            "limits",
            "run_timeout_seconds",
            "cadence",
            "misfire_grace_seconds",
            "max_consecutive_failures",
        ],
    )?;
    let title = text(body, "title", "title", 200)?.to_owned();
    let instruction = text(body, "instruction", "instruction", 100_000)?.to_owned();
    let agent_id = text(body, "agent_id", "agent_id", 64)?.to_owned();
    let agent_version = text(body, "agent_version", "agent_version", 64)?.to_owned();
    if text(body, "policy_profile", "policy_profile", 64)? != "default" {
        return Err(invalid("policy_profile", "`policy_profile` must be `default`"));
    }
    let scopes = body
        .get("requested_scopes")
        .and_then(Value::as_array)
        .ok_or_else(|| invalid("requested_scopes", "`requested_scopes` must be an array of scope names"))?;
    let mut requested_scopes: Vec<String> = Vec::new();
    for scope in scopes {
        let Some(name) = scope.as_str().filter(|name| SCHEDULE_SCOPES.contains(name)) else {
            return Err(invalid(
                "requested_scopes",
                format!("each requested scope must be one of {}", SCHEDULE_SCOPES.join(", ")),
            ));
        };
        if !requested_scopes.iter().any(|known| known == name) {
            requested_scopes.push(name.to_owned());
        }
    }
    let limits = object(body, "limits", "limits")?;
    only(
        limits,
        "limits.",
        &["max_steps", "max_model_calls", "max_tool_calls", "max_cost"],
    )?;
    let max_cost = limits
        .get("max_cost")
        .and_then(Value::as_str)
        .and_then(|text| Cost::parse(text).ok())
        .ok_or_else(|| {
            invalid(
                "limits.max_cost",
                "`limits.max_cost` must be a decimal string such as \"1\" or \"0.25\"",
            )
        })?;
    let limits = RunLimits {
        max_steps: integer(limits, "max_steps", "limits.max_steps", 1)?,
        max_model_calls: integer(limits, "max_model_calls", "limits.max_model_calls", 1)?,
        max_tool_calls: integer(limits, "max_tool_calls", "limits.max_tool_calls", 1)?,
        max_cost,
        run_timeout_seconds: {
            let timeout = integer(body, "run_timeout_seconds", "run_timeout_seconds", 1)?;
            // A run ends before the next daily firing, so two never overlap.
            if timeout > 86_400 {
                return Err(invalid(
                    "run_timeout_seconds",
                    "`run_timeout_seconds` must be at most 86400",
                ));
            }
            timeout
        },
    };
    let cadence = object(body, "cadence", "cadence")?;
    only(cadence, "cadence.", &["kind", "local_time", "timezone"])?;
    if cadence.get("kind").and_then(Value::as_str) != Some("DAILY") {
        return Err(invalid("cadence.kind", "`cadence.kind` must be `DAILY`"));
    }
    let local_time_text = cadence.get("local_time").and_then(Value::as_str).unwrap_or_default();
    let local_time = parse_local_time(local_time_text).ok_or_else(|| {
        invalid(
            "cadence.local_time",
            "`cadence.local_time` must be a wall time `HH:MM:SS`",
        )
    })?;
    let timezone = cadence.get("timezone").and_then(Value::as_str).unwrap_or_default();
    let zone = jiff::tz::TimeZone::get(timezone)
        .ok()
        .filter(|_| !timezone.is_empty())
        .ok_or_else(|| {
            invalid(
                "cadence.timezone",
                "`cadence.timezone` must be an IANA time zone such as Europe/London",
            )
        })?;
    let misfire_grace_seconds = integer(body, "misfire_grace_seconds", "misfire_grace_seconds", 0)?;
    let max_consecutive_failures = integer(body, "max_consecutive_failures", "max_consecutive_failures", 1)?;
    let next_fire_at = Daily { local_time, zone }.next_after(jiff::Timestamp::now());
    Ok(Definition {
        title,
        instruction,
        agent_id,
        agent_version,
        requested_scopes,
        limits,
        local_time: local_time_text.to_owned(),
        timezone: timezone.to_owned(),
        misfire_grace_seconds,
        max_consecutive_failures,
        next_fire_at,
    })
}

/// Creates a schedule (revision 1) from the schedule definition. Requires `Idempotency-Key`.
/// Every field is validated; a failure names it in `field`. `agent_id` and `agent_version` must
/// name a version a session was created with; the schedule pins it.
#[utoipa::path(
    post, path = "/v1/schedules", tag = "schedules",
    security(("bearer" = ["schedules.write"])),
    params(("Idempotency-Key" = String, Header, description = "The client's stable name for this schedule")),
    request_body(content = Object, description = "The schedule definition"),
    responses(
        (status = 201, description = "Created", body = ScheduleEnvelope),
        (status = 400, description = "Missing Idempotency-Key", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 409, description = "Same key in flight", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 422, description = "Invalid field (`validation_failed` with `field`), key reused, or unknown agent version",
         body = crate::openapi::Problem, content_type = "application/problem+json"),
    )
)]
pub async fn create(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Result<Response, ApiError> {
    let key = idempotency_key(&headers)?;
    let value: Value = serde_json::from_slice(&body)
        .map_err(|error| ApiError::new(ErrorCode::InvalidRequest).detail(format!("the body is not JSON: {error}")))?;
    let definition = validate(&value)?;
    let request_hash: String = Sha256::digest(value.to_string().as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
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
                local_time: &definition.local_time,
                timezone: &definition.timezone,
                misfire_grace_seconds: definition.misfire_grace_seconds,
                max_consecutive_failures: definition.max_consecutive_failures,
                next_fire_at: definition.next_fire_at,
                idempotency: IdempotencyClaim {
                    key: &key,
                    operation: "schedule.create",
                    request_hash: &request_hash,
                },
            },
            |row| StoredResponse {
                status: StatusCode::CREATED.as_u16(),
                body: serde_json::to_vec(&ScheduleEnvelope {
                    schedule: Schedule::from(row),
                })
                .unwrap_or_default(),
            },
        )
        .await?;
    match outcome {
        CreateSchedule::Created { response, .. } => Ok(replay(response, false)),
        CreateSchedule::Earlier(prior) => earlier(prior),
        CreateSchedule::UnknownAgentVersion => Err(ApiError::new(ErrorCode::UnknownAgentVersion)
            .detail("no session was created with this agent id and version; take both from a fresh session")
            .member("field", "agent_version")),
    }
}

/// Lists schedules, oldest first.
#[utoipa::path(
    get, path = "/v1/schedules", tag = "schedules",
    security(("bearer" = ["schedules.read"])),
    responses((status = 200, description = "Every schedule", body = ScheduleList))
)]
pub async fn list(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
) -> Result<JsonResponse<ScheduleList>, ApiError> {
    let rows = state.store.schedules(&caller.principal).await?;
    Ok(JsonResponse(ScheduleList {
        schedules: rows.iter().map(Schedule::from).collect(),
    }))
}

/// Reads a schedule.
#[utoipa::path(
    get, path = "/v1/schedules/{schedule_id}", tag = "schedules",
    security(("bearer" = ["schedules.read"])),
    params(("schedule_id" = Uuid, Path)),
    responses(
        (status = 200, description = "The schedule", body = ScheduleEnvelope),
        (status = 404, description = "No such schedule", body = crate::openapi::Problem, content_type = "application/problem+json"),
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
        schedule: Schedule::from(&row),
    }))
}

/// The schedule's occurrences, newest first, each linking to the run it started.
#[utoipa::path(
    get, path = "/v1/schedules/{schedule_id}/occurrences", tag = "schedules",
    security(("bearer" = ["schedules.read"])),
    params(("schedule_id" = Uuid, Path)),
    responses(
        (status = 200, description = "Occurrences", body = OccurrenceList),
        (status = 404, description = "No such schedule", body = crate::openapi::Problem, content_type = "application/problem+json"),
    )
)]
pub async fn occurrences(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(schedule_id): Path<String>,
) -> Result<JsonResponse<OccurrenceList>, ApiError> {
    let id = parse_id(&schedule_id, ScheduleId::parse, ErrorCode::ScheduleNotFound)?;
    let rows = state
        .store
        .occurrences(&caller.principal, id)
        .await?
        .ok_or_else(|| ApiError::new(ErrorCode::ScheduleNotFound))?;
    Ok(JsonResponse(OccurrenceList {
        occurrences: rows.iter().map(Occurrence::from).collect(),
    }))
}

#[derive(Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CancelParams {
    /// The revision the client last saw.
    expected_revision: Option<String>,
}

/// Cancels a schedule at `expected_revision`; it never fires again. Another revision → 409.
#[utoipa::path(
    delete, path = "/v1/schedules/{schedule_id}", tag = "schedules",
    security(("bearer" = ["schedules.write"])),
    params(("schedule_id" = Uuid, Path), CancelParams),
    responses(
        (status = 200, description = "Cancelled (revision increased)", body = ScheduleEnvelope),
        (status = 400, description = "Missing or malformed expected_revision", body = crate::openapi::Problem,
         content_type = "application/problem+json"),
        (status = 404, description = "No such schedule", body = crate::openapi::Problem, content_type = "application/problem+json"),
        (status = 409, description = "Another revision (`revision_mismatch`, with `revision`)", body = crate::openapi::Problem,
         content_type = "application/problem+json"),
    )
)]
pub async fn cancel(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    Path(schedule_id): Path<String>,
    Query(params): Query<CancelParams>,
) -> Result<JsonResponse<ScheduleEnvelope>, ApiError> {
    let id = parse_id(&schedule_id, ScheduleId::parse, ErrorCode::ScheduleNotFound)?;
    let expected = params
        .expected_revision
        .as_deref()
        .and_then(|text| text.parse::<i32>().ok())
        .ok_or_else(|| {
            ApiError::new(ErrorCode::InvalidRequest)
                .detail("expected_revision must be the schedule's current revision, an integer")
                .member("field", "expected_revision")
        })?;
    match state.store.cancel_schedule(&caller.principal, id, expected).await? {
        CancelSchedule::Cancelled(row) => Ok(JsonResponse(ScheduleEnvelope {
            schedule: Schedule::from(row.as_ref()),
        })),
        CancelSchedule::RevisionMismatch(row) => Err(ApiError::new(ErrorCode::RevisionMismatch)
            .detail(format!("the schedule is at revision {}", row.revision))
            .member("revision", row.revision)),
        CancelSchedule::NotFound => Err(ApiError::new(ErrorCode::ScheduleNotFound)),
    }
}

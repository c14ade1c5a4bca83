//! Request bodies and parameters. Each refuses unknown members, and its schema carries the
//! bounds, patterns and enums the server enforces, so that a request the OpenAPI document calls
//! valid is accepted and one it calls invalid is refused. The text patterns are
//! `domain::text`'s (a test checks they are the same).

use serde::{Deserialize, Deserializer, Serialize};
use serde_json::Value;
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

/// Longest message, answer or instruction, in characters.
pub const TEXT_MAX_CHARS: usize = 65_536;
/// Most attachments on one message.
pub const MESSAGE_MAX_ATTACHMENTS: usize = 20;

/// A member that may be absent but, when present, is not `null`.
fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(deserializer: D) -> Result<Option<T>, D::Error> {
    T::deserialize(deserializer).map(Some)
}

/// A whole number: JSON Schema's `integer` includes numbers such as `3.0`, so they are read as
/// the integer they are; a fraction or a value out of range is refused.
fn whole<'de, D: Deserializer<'de>, T: TryFrom<i64>>(deserializer: D) -> Result<T, D::Error> {
    use serde::de::Error;
    let number = serde_json::Number::deserialize(deserializer)?;
    let integer = match (number.as_i64(), number.as_f64()) {
        (Some(integer), _) => Some(integer),
        (None, Some(float)) if float.fract() == 0.0 && float.abs() < 9.0e18 => Some(float as i64),
        _ => None,
    };
    integer
        .and_then(|integer| T::try_from(integer).ok())
        .ok_or_else(|| D::Error::custom(format!("invalid value: {number}, expected a whole number in range")))
}

/// A member that may be absent, `null` or a value, keeping the three apart: absent is `None`, an
/// explicit `null` is `Some(None)`.
fn explicit_null<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
    deserializer: D,
) -> Result<Option<Option<T>>, D::Error> {
    Option::<T>::deserialize(deserializer).map(Some)
}

/// `POST /v1/sessions`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateSession {
    /// A configured agent (the document lists them).
    pub agent_id: String,
    /// Free-form client metadata: a JSON object of at most 16 KiB, strings without U+0000,
    /// numbers within ±(2^53 − 1). A string `title` member becomes the session's initial title.
    #[serde(default, deserialize_with = "present")]
    #[schema(value_type = Option<Object>, nullable = false)]
    pub metadata: Option<serde_json::Map<String, Value>>,
}

/// `PATCH /v1/sessions/{session_id}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UpdateSession {
    /// Required: a folder id files the session there; an explicit `null` returns it to the
    /// history.
    #[serde(default, deserialize_with = "explicit_null")]
    #[schema(value_type = Option<Uuid>, required = true)]
    pub folder_id: Option<Option<Uuid>>,
}

/// `GET /v1/sessions`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListSessions {
    /// The `next_cursor` of the previous page; omit for the first page. Opaque and
    /// tamper-evident: only a cursor this server issued is accepted.
    pub cursor: Option<String>,
    /// Page size (default 50).
    #[param(minimum = 1, maximum = 200)]
    pub limit: Option<u32>,
}

/// `POST /v1/sessions/{session_id}/messages`: text, attachments or both.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubmitMessage {
    /// The message text; may be omitted when the message is attachments alone.
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schema(max_length = 65536, pattern = r"^[^\u0000]*$", nullable = false)]
    pub text: Option<String>,
    /// Artifacts of this session to attach.
    #[serde(default)]
    #[schema(max_items = 20)]
    pub attachments: Vec<Uuid>,
}

/// `POST /v1/approvals/{approval_id}/decision`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct DecideApproval {
    pub decision: Decision,
}

/// The owner's decision on an approval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Decision {
    /// Run this call, once.
    ApproveOnce,
    /// Do not run it; the model is told.
    Deny,
}

/// `POST /v1/runs/{run_id}/input`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AnswerQuestion {
    /// The id of the question the client displayed.
    pub question_id: Uuid,
    #[schema(
        max_length = 65536,
        pattern = r"^[^\u0000]*[^\u0000\u0009-\u000d\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^\u0000]*$"
    )]
    pub text: String,
}

/// `POST /v1/folders` and `PATCH /v1/folders/{folder_id}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FolderName {
    /// Up to 100 characters, no control characters, not blank; stored trimmed, unique per owner
    /// ignoring case.
    #[schema(
        max_length = 100,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\u0000-\u0020\u007f-\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^\u0000-\u001f\u007f-\u009f]*$"
    )]
    pub name: String,
}

/// `PUT /v1/settings/models`: one of the offered combinations (the served document lists them).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SaveModelSettings {
    pub chat_model: String,
    pub chat_reasoning_effort: String,
    pub memory_model: String,
    pub memory_reasoning_effort: String,
}

/// `POST /v1/devices`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterDevice {
    /// The client's own stable id for this installation.
    #[schema(max_length = 128, pattern = r"^[\u0021-\u007e]+$")]
    pub client_device_id: String,
    /// The push token, in hexadecimal.
    #[schema(min_length = 32, max_length = 400, pattern = r"^[0-9A-Fa-f]+$")]
    pub push_token: String,
    pub environment: PushEnvironment,
}

/// Which APNs environment a device's token belongs to (from the client build).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PushEnvironment {
    Sandbox,
    Production,
}

impl PushEnvironment {
    pub const fn as_str(self) -> &'static str {
        match self {
            PushEnvironment::Sandbox => "sandbox",
            PushEnvironment::Production => "production",
        }
    }
}

/// `POST /v1/sessions/{session_id}/artifacts`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct UploadArtifact {
    /// The file's name as shown to the owner: up to 255 characters, no control characters, no
    /// `/` or `\`, not blank, not `.` or `..`. Default: the multipart part's filename, else
    /// `attachment`.
    #[param(
        max_length = 255,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f/\\]*[^\u0000-\u0020\u007f-\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000/\\][^\u0000-\u001f\u007f-\u009f/\\]*$"
    )]
    pub filename: Option<String>,
}

/// `GET /v1/sessions/{session_id}/events`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct StreamEvents {
    /// Start after this sequence (the `Last-Event-ID` header, when present, wins).
    #[param(minimum = 0)]
    pub after: Option<i64>,
}

/// `DELETE /v1/schedules/{schedule_id}`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct CancelSchedule {
    /// The revision the client last saw.
    #[param(minimum = 1)]
    pub expected_revision: i32,
}

/// `POST /v1/schedules`: the schedule definition. Every member is required.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleDefinition {
    #[schema(
        max_length = 200,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\u0000-\u0020\u007f-\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^\u0000-\u001f\u007f-\u009f]*$"
    )]
    pub title: String,
    /// What the agent is asked at each firing.
    #[schema(
        max_length = 65536,
        pattern = r"^[^\u0000]*[^\u0000\u0009-\u000d\u0020\u0085\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^\u0000]*$"
    )]
    pub instruction: String,
    /// With `agent_version`: a version a session was created with (take both from a session).
    #[schema(
        max_length = 64,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\u0000-\u0020\u007f-\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^\u0000-\u001f\u007f-\u009f]*$"
    )]
    pub agent_id: String,
    #[schema(
        max_length = 64,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\u0000-\u0020\u007f-\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^\u0000-\u001f\u007f-\u009f]*$"
    )]
    pub agent_version: String,
    pub policy_profile: PolicyProfile,
    /// The scoped tools the schedule's runs may use (never sending).
    pub requested_scopes: Vec<ScheduleScope>,
    pub limits: ScheduleLimits,
    /// A run ends before the next daily firing, so two never overlap.
    #[schema(minimum = 1, maximum = 86400)]
    #[serde(deserialize_with = "whole")]
    pub run_timeout_seconds: u32,
    pub cadence: Cadence,
    /// How late a firing may start (after downtime) before it is skipped as `misfire`.
    #[schema(minimum = 0, maximum = 2147483647)]
    #[serde(deserialize_with = "whole")]
    pub misfire_grace_seconds: u32,
    /// Failed runs in a row that stop the schedule.
    #[schema(minimum = 1, maximum = 2147483647)]
    #[serde(deserialize_with = "whole")]
    pub max_consecutive_failures: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum PolicyProfile {
    Default,
}

/// A scope a schedule may request.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum ScheduleScope {
    #[serde(rename = "mcp.mail_read.use")]
    MailRead,
    #[serde(rename = "mcp.mail_write.use")]
    MailWrite,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduleLimits {
    #[schema(minimum = 1, maximum = 2147483647)]
    #[serde(deserialize_with = "whole")]
    pub max_steps: u32,
    #[schema(minimum = 1, maximum = 2147483647)]
    #[serde(deserialize_with = "whole")]
    pub max_model_calls: u32,
    #[schema(minimum = 1, maximum = 2147483647)]
    #[serde(deserialize_with = "whole")]
    pub max_tool_calls: u32,
    /// A decimal string such as `"1"` or `"0.25"`: up to 12 whole digits and 6 decimals.
    #[schema(pattern = r"^[0-9]{1,12}(\.[0-9]{1,6})?$")]
    pub max_cost: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Cadence {
    pub kind: CadenceKind,
    /// The local wall time of each firing, `HH:MM:SS`.
    #[schema(pattern = r"^([01][0-9]|2[0-3]):[0-5][0-9]:[0-5][0-9]$")]
    pub local_time: String,
    /// An IANA time zone such as `Europe/London` (the served document lists them).
    pub timezone: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub enum CadenceKind {
    #[serde(rename = "DAILY")]
    Daily,
}

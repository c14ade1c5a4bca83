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
pub(crate) fn whole<'de, D: Deserializer<'de>, T: TryFrom<i64>>(deserializer: D) -> Result<T, D::Error> {
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
pub(crate) fn explicit_null<'de, D: Deserializer<'de>, T: Deserialize<'de>>(
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
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schema(value_type = Option<Object>, nullable = false)]
    pub metadata: Option<serde_json::Map<String, Value>>,
    /// The `READY` browser profile the agent may act on (`browser.act`), with Website Access on;
    /// checked again by the server (the owner's, and ready).
    #[serde(default, deserialize_with = "present", skip_serializing_if = "Option::is_none")]
    #[schema(nullable = false)]
    pub browser_profile_id: Option<Uuid>,
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

/// `GET /v1/schedules`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListSchedules {
    /// `true` lists cancelled schedules too; by default the list holds active and stopped ones.
    pub include_cancelled: Option<bool>,
}

/// `GET /v1/sessions`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListSessions {
    /// The `next_cursor` of the previous page; omit it (or leave it empty) for the first page.
    /// Opaque and tamper-evident: only a cursor this server issued is accepted.
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
    /// Run this browser action and grant the task permission its approval offers (`Allow all
    /// actions for this task`): the run's later actions within its scope and limits, never its
    /// exceptions, need no approval until it runs out or is stopped. Only for an approval with a
    /// `task_offer`.
    AllowForTask,
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

/// `POST /v1/folder-proposals/{proposal_id}/accept`: optional; `name` renames a proposed new
/// folder (the same rules as a folder's name) and is refused for a proposal of an existing one.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct FolderProposalAcceptance {
    #[schema(
        max_length = 100,
        pattern = r"^[^\u0000-\u001f\u007f-\u009f]*[^\u0000-\u0020\u007f-\u00a0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000][^\u0000-\u001f\u007f-\u009f]*$"
    )]
    #[serde(default)]
    pub name: Option<String>,
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

/// `POST /v1/devices/web-push`: an installed web client's push subscription, as the browser's
/// `PushSubscription` gives it, registered as a device beside APNs tokens.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RegisterWebPushDevice {
    /// The client's own stable id for this installation.
    #[schema(max_length = 128, pattern = r"^[\u0021-\u007e]+$")]
    pub client_device_id: String,
    /// The push service's endpoint for this subscription: an `https` URL without credentials or
    /// fragment.
    #[schema(max_length = 2048, pattern = r#"^https://[!"$-.0->A-~]+(/[!"$-~]*)?$"#)]
    pub endpoint: String,
    /// The subscription's P-256 public key (`keys.p256dh`): the uncompressed point, base64url
    /// without padding.
    #[schema(pattern = r"^B[A-P][A-Za-z0-9_-]{84}[AEIMQUYcgkosw048]$")]
    pub p256dh: String,
    /// The subscription's 16-byte authentication secret (`keys.auth`), base64url without padding.
    #[schema(pattern = r"^[A-Za-z0-9_-]{21}[AQgw]$")]
    pub auth: String,
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
    /// How long each run may wait for the owner (an approval or a question) before it expires
    /// and the run is cancelled with reason `deadline`. Waiting does not count towards
    /// `run_timeout_seconds`. Default a day.
    #[schema(minimum = 1, maximum = 2592000, default = 86400)]
    #[serde(default = "default_wait_timeout", deserialize_with = "whole")]
    pub wait_timeout_seconds: u32,
}

fn default_wait_timeout() -> u32 {
    domain::run::DEFAULT_WAIT_TIMEOUT_SECONDS
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

/// A request member that breaks a rule its schema states: which member, and what is wrong.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Invalid {
    /// The member's dotted path, e.g. `limits.max_cost`.
    pub field: String,
    pub detail: String,
}

impl Invalid {
    pub(crate) fn new(field: &str, detail: impl Into<String>) -> Invalid {
        Invalid {
            field: field.to_owned(),
            detail: detail.into(),
        }
    }
}

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.detail)
    }
}

impl std::error::Error for Invalid {}

impl TryFrom<FolderName> for domain::folder::FolderName {
    type Error = Invalid;

    fn try_from(body: FolderName) -> Result<Self, Invalid> {
        domain::folder::FolderName::parse(&body.name).map_err(|error| Invalid::new("name", error.to_string()))
    }
}

impl FolderProposalAcceptance {
    /// The new folder's name, when one was given.
    pub fn rename(self) -> Result<Option<domain::folder::FolderName>, Invalid> {
        self.name.map(|name| FolderName { name }.try_into()).transpose()
    }
}

impl TryFrom<SubmitMessage> for domain::run::UserMessage {
    type Error = Invalid;

    fn try_from(body: SubmitMessage) -> Result<Self, Invalid> {
        if body.text.as_deref().is_some_and(|text| !domain::text::has_no_nul(text)) {
            return Err(Invalid::new("text", "text must not contain U+0000"));
        }
        if body
            .text
            .as_deref()
            .is_some_and(|text| text.chars().count() > TEXT_MAX_CHARS)
        {
            return Err(Invalid::new(
                "text",
                format!("text must be at most {TEXT_MAX_CHARS} characters"),
            ));
        }
        if body.attachments.len() > MESSAGE_MAX_ATTACHMENTS {
            return Err(Invalid::new(
                "attachments",
                format!("at most {MESSAGE_MAX_ATTACHMENTS} attachments"),
            ));
        }
        let text = body
            .text
            .as_deref()
            .map(str::trim)
            .filter(|text| !text.is_empty())
            .map(str::to_owned);
        let mut attachments: Vec<domain::ids::ArtifactId> = Vec::with_capacity(body.attachments.len());
        for id in body.attachments.into_iter().map(domain::ids::ArtifactId::from_uuid) {
            if !attachments.contains(&id) {
                attachments.push(id);
            }
        }
        if text.is_none() && attachments.is_empty() {
            return Err(Invalid::new("text", "a message needs text, attachments or both"));
        }
        Ok(domain::run::UserMessage { text, attachments })
    }
}

impl TryFrom<AnswerQuestion> for domain::run::Answer {
    type Error = Invalid;

    fn try_from(body: AnswerQuestion) -> Result<Self, Invalid> {
        if !domain::text::is_some_text(&body.text) || body.text.chars().count() > TEXT_MAX_CHARS {
            return Err(Invalid::new(
                "text",
                format!("text must be 1 to {TEXT_MAX_CHARS} characters, not all whitespace, without U+0000"),
            ));
        }
        Ok(domain::run::Answer {
            question_id: body.question_id,
            text: body.text.trim().to_owned(),
        })
    }
}

impl TryFrom<ScheduleDefinition> for domain::schedule::ScheduleSpec {
    type Error = Invalid;

    /// Checks what the body's types cannot say (each rule is also in the schema) and looks the
    /// time zone up by name.
    fn try_from(body: ScheduleDefinition) -> Result<Self, Invalid> {
        let visible = |value: &str, field: &str, max: usize| {
            if domain::text::is_visible(value) && value.chars().count() <= max {
                Ok(value.trim().to_owned())
            } else {
                Err(Invalid::new(
                    field,
                    format!("`{field}` must be 1 to {max} characters, not blank, without control characters"),
                ))
            }
        };
        let title = visible(&body.title, "title", 200)?;
        let agent_id = visible(&body.agent_id, "agent_id", 64)?;
        let agent_version = visible(&body.agent_version, "agent_version", 64)?;
        if !domain::text::is_some_text(&body.instruction) || body.instruction.chars().count() > TEXT_MAX_CHARS {
            return Err(Invalid::new(
                "instruction",
                format!("`instruction` must be 1 to {TEXT_MAX_CHARS} characters, not blank, without U+0000"),
            ));
        }
        let mut requested_scopes: Vec<String> = Vec::new();
        for scope in &body.requested_scopes {
            let name = match scope {
                ScheduleScope::MailRead => domain::cadence::SCHEDULE_SCOPES[0],
                ScheduleScope::MailWrite => domain::cadence::SCHEDULE_SCOPES[1],
            };
            if !requested_scopes.iter().any(|known| known == name) {
                requested_scopes.push(name.to_owned());
            }
        }
        let max_cost = domain::run::Cost::parse(&body.limits.max_cost).map_err(|_| {
            Invalid::new(
                "limits.max_cost",
                "`limits.max_cost` must be a decimal string such as \"1\" or \"0.25\"",
            )
        })?;
        let at_least = |value: u32, min: u32, field: &str| {
            if value >= min && value <= i32::MAX as u32 {
                Ok(value)
            } else {
                Err(Invalid::new(
                    field,
                    format!("`{field}` must be an integer of at least {min}"),
                ))
            }
        };
        let run_timeout_seconds = at_least(body.run_timeout_seconds, 1, "run_timeout_seconds")?;
        // A run ends before the next daily firing, so two never overlap.
        if run_timeout_seconds > 86_400 {
            return Err(Invalid::new(
                "run_timeout_seconds",
                "`run_timeout_seconds` must be at most 86400",
            ));
        }
        let limits = domain::run::RunLimits {
            max_steps: at_least(body.limits.max_steps, 1, "limits.max_steps")?,
            max_model_calls: at_least(body.limits.max_model_calls, 1, "limits.max_model_calls")?,
            max_tool_calls: at_least(body.limits.max_tool_calls, 1, "limits.max_tool_calls")?,
            max_cost,
            run_timeout_seconds,
        };
        let local_time = domain::cadence::parse_local_time(&body.cadence.local_time).ok_or_else(|| {
            Invalid::new(
                "cadence.local_time",
                "`cadence.local_time` must be a wall time `HH:MM:SS`",
            )
        })?;
        let timezone = body.cadence.timezone;
        // Exactly a name the database lists (the document's enum): the lookup ignores case, the
        // zone it finds carries its listed name.
        let zone = jiff::tz::TimeZone::get(&timezone)
            .ok()
            .filter(|zone| zone.iana_name() == Some(timezone.as_str()))
            .ok_or_else(|| {
                Invalid::new(
                    "cadence.timezone",
                    "`cadence.timezone` must be an IANA time zone such as Europe/London",
                )
            })?;
        Ok(domain::schedule::ScheduleSpec {
            title,
            instruction: body.instruction.trim().to_owned(),
            agent_id,
            agent_version,
            requested_scopes,
            limits,
            local_time: body.cadence.local_time,
            timezone,
            cadence: domain::cadence::Daily { local_time, zone },
            misfire_grace_seconds: at_least(body.misfire_grace_seconds, 0, "misfire_grace_seconds")?,
            max_consecutive_failures: at_least(body.max_consecutive_failures, 1, "max_consecutive_failures")?,
            wait_timeout_seconds: match body.wait_timeout_seconds {
                seconds @ 1..=domain::run::MAX_WAIT_TIMEOUT_SECONDS => seconds,
                _ => {
                    return Err(Invalid::new(
                        "wait_timeout_seconds",
                        "`wait_timeout_seconds` must be an integer from 1 to 2592000 (30 days)",
                    ));
                }
            },
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_message_is_trimmed_text_and_distinct_attachments() {
        let id = Uuid::from_u128(7);
        let message = domain::run::UserMessage::try_from(SubmitMessage {
            text: Some("  \n ".to_owned()),
            attachments: vec![id, id],
        })
        .expect("attachments alone are a message");
        assert_eq!(message.text, None, "blank text is no text");
        assert_eq!(message.attachments.len(), 1, "each attachment once");
        let empty = domain::run::UserMessage::try_from(SubmitMessage {
            text: Some(" ".to_owned()),
            attachments: Vec::new(),
        });
        assert_eq!(empty.map_err(|invalid| invalid.field), Err("text".to_owned()));
    }

    #[test]
    fn integers_may_be_written_with_a_zero_fraction() {
        let limits: ScheduleLimits =
            serde_json::from_str(r#"{"max_steps": 3.0, "max_model_calls": 1, "max_tool_calls": 2, "max_cost": "1"}"#)
                .expect("3.0 is the integer 3");
        assert_eq!(limits.max_steps, 3);
        let fraction = serde_json::from_str::<ScheduleLimits>(
            r#"{"max_steps": 3.5, "max_model_calls": 1, "max_tool_calls": 2, "max_cost": "1"}"#,
        );
        assert!(fraction.is_err(), "3.5 is not");
    }
}

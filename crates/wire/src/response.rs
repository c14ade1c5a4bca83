//! Response bodies: what each operation answers with, as types. States are enums.

use domain::approval::{ApprovalStatus, Risk};
use domain::run::RunState;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

use crate::request::{Cadence, PushEnvironment, ScheduleLimits};

/// `GET /health/ready`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Ready {
    pub status: ReadyStatus,
    /// The release identity, the same value as the `Steward-Release` header.
    pub release: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReadyStatus {
    Ready,
}

/// A row of the session index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SessionSummary {
    pub session_id: Uuid,
    /// Server-owned title; null until one is known.
    pub title: Option<String>,
    pub agent_id: String,
    /// The agent version pinned at creation; never changes.
    pub agent_version: String,
    /// The folder holding the session, or null when it is in the history.
    pub folder_id: Option<Uuid>,
    /// The schedule that started the session; null for conversations.
    pub schedule_id: Option<Uuid>,
    /// The most recent run, if any.
    pub last_run_id: Option<Uuid>,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: jiff::Timestamp,
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: jiff::Timestamp,
}

/// A session, as returned by creation and point reads.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Session {
    #[serde(flatten)]
    pub summary: SessionSummary,
    /// The client metadata given at creation.
    #[schema(value_type = Object)]
    pub metadata: serde_json::Map<String, Value>,
    /// For a draft's send session (which a send approval's notification opens), the draft it
    /// sends: review the approval there, against the draft. Null for conversations.
    #[serde(default)]
    pub draft_id: Option<Uuid>,
    /// The browser profile the conversation's agent acts on (`browser.act`), chosen when it was
    /// created; null when none was.
    #[serde(default)]
    pub browser_profile_id: Option<Uuid>,
}

/// One page of the session index.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SessionPage {
    pub sessions: Vec<SessionSummary>,
    /// Present until the last page; pass it back as `cursor`.
    pub next_cursor: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Folder {
    pub folder_id: Uuid,
    pub name: String,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: jiff::Timestamp,
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: jiff::Timestamp,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FolderList {
    /// Every folder, oldest first.
    pub folders: Vec<Folder>,
}

/// A proposal, made by the agent, to file conversations into a folder. Nothing is filed until
/// the owner accepts it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FolderProposal {
    pub proposal_id: Uuid,
    /// The existing folder it would file into; null when accepting makes a new folder named
    /// `name`.
    pub folder_id: Option<Uuid>,
    /// The existing folder's current name, or the proposed new folder's name.
    pub name: String,
    /// The conversations it would file that are still unfiled, in index order (never empty,
    /// never a scheduled session).
    pub session_ids: Vec<Uuid>,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: jiff::Timestamp,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct FolderProposalList {
    /// Every proposal waiting for the owner that can still file something, oldest first (at
    /// most 20).
    pub proposals: Vec<FolderProposal>,
}

/// What accepting a proposal did.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct AcceptedFolderProposal {
    pub proposal_id: Uuid,
    /// The folder the conversations are now in (made by this acceptance for a new-folder
    /// proposal).
    pub folder: Folder,
    /// The conversations this acceptance filed.
    pub session_ids: Vec<Uuid>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Artifact {
    pub artifact_id: Uuid,
    pub session_id: Uuid,
    pub filename: String,
    /// The media type given at upload.
    pub media_type: String,
    pub size_bytes: i64,
    /// Lowercase hex SHA-256 of the bytes.
    pub sha256: String,
    /// The strong entity tag the content route serves.
    pub etag: String,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: jiff::Timestamp,
    /// When retention removed the bytes (`ARTIFACT_RETENTION_DAYS` after the upload); from then
    /// on the content route answers 410 `artifact_expired`. Null while the bytes are kept.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub expired_at: Option<jiff::Timestamp>,
}

/// What the client shows under a run's title.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum RunStatus {
    Working,
    NeedsApproval,
    NeedsAnswer,
    Completed,
    Failed,
    Cancelled,
}

impl From<RunState> for RunStatus {
    fn from(state: RunState) -> RunStatus {
        match state {
            RunState::Queued | RunState::Running => RunStatus::Working,
            RunState::WaitingApproval => RunStatus::NeedsApproval,
            RunState::WaitingInput => RunStatus::NeedsAnswer,
            RunState::Completed => RunStatus::Completed,
            RunState::Failed => RunStatus::Failed,
            RunState::Cancelled => RunStatus::Cancelled,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct RunLimits {
    pub max_steps: u32,
    pub max_model_calls: u32,
    pub max_tool_calls: u32,
    /// A decimal string, e.g. `"1"` or `"0.25"`.
    pub max_cost: String,
    pub run_timeout_seconds: u32,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Run {
    pub run_id: Uuid,
    pub session_id: Uuid,
    pub state: RunState,
    /// For the client's status line.
    pub status: RunStatus,
    /// Why a terminal run ended: `requested` or `deadline` when cancelled, a code when failed.
    pub reason: Option<String>,
    /// Sequence of the `user.message.created` event that started the run.
    pub message_seq: Option<i64>,
    pub limits: RunLimits,
    #[schema(value_type = String, format = DateTime)]
    pub deadline_at: jiff::Timestamp,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: jiff::Timestamp,
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: jiff::Timestamp,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub finished_at: Option<jiff::Timestamp>,
}

/// `POST /v1/sessions/{session_id}/messages`: the run the message started.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Accepted {
    pub run: Run,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Approval {
    pub approval_id: Uuid,
    pub run_id: Uuid,
    pub session_id: Uuid,
    pub invocation_id: Uuid,
    pub tool: String,
    pub risk: Risk,
    /// The arguments, whole except strings over 512 characters, which are truncated.
    #[schema(value_type = Object)]
    pub arguments: Value,
    /// JSON Pointer of each truncated string → hex SHA-256 of its full value.
    pub argument_digests: std::collections::BTreeMap<String, String>,
    pub status: ApprovalStatus,
    /// A browser action's offer of a task permission (`allow_for_task`); absent otherwise, and
    /// for an exception (a purchase or signing out), which is approved on its own.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_offer: Option<domain::browser::TaskOffer>,
    /// How an approved call was allowed: once, or for the task (by the permission it granted or
    /// the one that covered it). Absent until approved.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_for: Option<crate::browser::ApprovedFor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_permission_id: Option<Uuid>,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub decided_at: Option<jiff::Timestamp>,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: jiff::Timestamp,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ApprovalList {
    pub approvals: Vec<Approval>,
}

/// Where a schedule is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ScheduleState {
    Active,
    /// Cancelled by the owner: it never runs again, and stays readable with its occurrences
    /// (listed only when asked for).
    Cancelled,
    /// Stopped after `max_consecutive_failures` failed runs in a row.
    Stopped,
}

impl ScheduleState {
    pub const ALL: [ScheduleState; 3] = [ScheduleState::Active, ScheduleState::Cancelled, ScheduleState::Stopped];

    /// The stored spelling, the same word as on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            ScheduleState::Active => "active",
            ScheduleState::Cancelled => "cancelled",
            ScheduleState::Stopped => "stopped",
        }
    }

    pub fn parse(text: &str) -> Option<ScheduleState> {
        ScheduleState::ALL.into_iter().find(|state| state.as_str() == text)
    }
}

/// A schedule as the API shows it (wrapped as `{"schedule": …}`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Schedule {
    pub id: Uuid,
    /// Starts at 1; cancelling increases it.
    pub revision: i32,
    pub title: String,
    pub instruction: String,
    pub agent_id: String,
    pub agent_version: String,
    pub policy_profile: String,
    pub requested_scopes: Vec<String>,
    pub limits: ScheduleLimits,
    pub run_timeout_seconds: u32,
    /// How long each run may wait for the owner before it expires.
    pub wait_timeout_seconds: u32,
    pub cadence: Cadence,
    pub misfire_grace_seconds: i32,
    pub max_consecutive_failures: i32,
    pub state: ScheduleState,
    pub consecutive_failures: i32,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub next_fire_at: Option<jiff::Timestamp>,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: jiff::Timestamp,
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: jiff::Timestamp,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub cancelled_at: Option<jiff::Timestamp>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ScheduleEnvelope {
    pub schedule: Schedule,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ScheduleList {
    pub schedules: Vec<Schedule>,
}

pub use domain::schedule::OccurrenceState;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Occurrence {
    pub occurrence_id: Uuid,
    #[schema(value_type = String, format = DateTime)]
    pub scheduled_for: jiff::Timestamp,
    /// The schedule revision that fired.
    pub schedule_revision: i32,
    pub state: OccurrenceState,
    /// Why it was skipped or failed (e.g. `misfire`, `schedule.authorization_failed`).
    pub reason: Option<String>,
    pub session_id: Option<Uuid>,
    /// The run it started.
    pub run_id: Option<Uuid>,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: jiff::Timestamp,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct OccurrenceList {
    pub occurrences: Vec<Occurrence>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Device {
    pub device_id: Uuid,
    pub client_device_id: String,
    pub kind: DeviceKind,
    /// An APNs device's environment; absent for Web Push.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub environment: Option<PushEnvironment>,
    pub active: bool,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: jiff::Timestamp,
    #[schema(value_type = String, format = DateTime)]
    pub updated_at: jiff::Timestamp,
}

/// How a device receives pushes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum DeviceKind {
    /// An Apple device token (`POST /v1/devices`).
    Apns,
    /// A browser's push subscription (`POST /v1/devices/web-push`).
    WebPush,
}

/// `GET /v1/devices/web-push`: what a web client subscribes with.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct WebPushKey {
    /// The server's VAPID public key (RFC 8292), the subscription's `applicationServerKey`:
    /// an uncompressed P-256 point, base64url without padding.
    pub application_server_key: String,
}

/// `GET /v1/settings/models` and the answer to saving them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct ModelSettings {
    pub chat_model: String,
    pub chat_reasoning_effort: String,
    pub memory_model: String,
    pub memory_reasoning_effort: String,
    /// The combinations the server offers: `{"chat": [{"model", "reasoning_efforts"}], "memory": [...]}`.
    #[schema(value_type = Object)]
    pub offered: domain::models::Offered,
}

/// A pending notification (`GET /v1/notifications`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Notification {
    pub notification_id: Uuid,
    pub kind: domain::notification::NotificationKind,
    /// The closed version-1 tap dictionary, the same as in the push payload: kind and ids only.
    pub payload: domain::notification::TapPayload,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: jiff::Timestamp,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct NotificationList {
    pub notifications: Vec<Notification>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_states_are_the_wire_words() {
        for state in ScheduleState::ALL {
            assert_eq!(serde_json::json!(state), serde_json::json!(state.as_str()));
            assert_eq!(ScheduleState::parse(state.as_str()), Some(state));
        }
        for state in OccurrenceState::ALL {
            assert_eq!(serde_json::json!(state), serde_json::json!(state.as_str()));
            assert_eq!(OccurrenceState::parse(state.as_str()), Some(*state));
        }
    }

    #[test]
    fn the_status_line_follows_the_state() {
        assert_eq!(RunStatus::from(RunState::Queued), RunStatus::Working);
        assert_eq!(RunStatus::from(RunState::WaitingApproval), RunStatus::NeedsApproval);
        assert_eq!(serde_json::json!(RunStatus::NeedsAnswer), "needs_answer");
    }
}

/// How a request authenticated, as `GET /v1/web/session` reports it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum WebSessionCredential {
    /// The static bearer token.
    Bearer,
    /// The web client's session cookie.
    WebSession,
}

/// The caller's credential: made by `POST /v1/web/session`, read by `GET`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct WebSession {
    pub credential: WebSessionCredential,
    /// The scopes this credential holds now.
    pub scopes: Vec<String>,
    /// When a web session ends; null for the bearer token.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub expires_at: Option<jiff::Timestamp>,
}

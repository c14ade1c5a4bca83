//! Website Access (`/v1/browser`, mounted with `AGENT_BROWSER_ENABLED=1`): the owner's browser
//! profiles (the sites the agent may act on as the owner) and the sign-in ceremonies that give a
//! profile its website session. A ceremony's capability or link appears in the answer that
//! begins it, once; it is never stored and never readable again. A ceremony's status is
//! secret-free.

use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

/// Where a profile stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ProfileState {
    /// Created; no sign-in completed yet. Not selectable for conversations.
    Pending,
    /// Signed in: selectable for new conversations.
    Ready,
    /// Removed: its website session is gone.
    Revoked,
}

/// A browser profile.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct BrowserProfile {
    pub profile_id: Uuid,
    /// The exact public HTTPS origin the profile signs in to.
    pub primary_origin: String,
    /// Every origin the profile's browser may reach, the primary one first.
    #[serde(rename = "allowedOrigins")]
    pub allowed_origins: Vec<String>,
    pub state: ProfileState,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: jiff::Timestamp,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub ready_at: Option<jiff::Timestamp>,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub revoked_at: Option<jiff::Timestamp>,
}

/// `GET /v1/browser/profiles`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct BrowserProfileList {
    /// Newest first, revoked ones included.
    pub profiles: Vec<BrowserProfile>,
}

/// How a ceremony's session arrives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CeremonyKind {
    /// The client signs in in its own private window and hands the session over.
    Device,
    /// The owner signs in on the browser role's sign-in page (`Continue in web browser`).
    Remote,
}

/// Where a ceremony stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CeremonyState {
    /// Waiting: for the handoff, or for the sign-in page to be opened.
    Open,
    /// The remote sign-in page is open.
    Active,
    /// The session was kept: the profile is ready.
    Completed,
    /// The handoff was refused; the ceremony is over (an unused profile is removed).
    Rejected,
    /// Not used within five minutes (or the sign-in page's fifteen).
    Expired,
    /// Replaced by a new ceremony (`Start over`), closed, or its profile removed.
    Cancelled,
}

/// A ceremony to begin.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct BeginCeremony {
    pub kind: CeremonyKind,
    /// `remote` only: the site's login page, an address on one of the profile's origins.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub login_url: Option<String>,
}

/// `POST /v1/browser/profiles`: a new profile and its first ceremony, made together (a
/// ceremony that cannot begin leaves no profile).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct CreateBrowserProfile {
    /// An exact public HTTPS origin (`https://example.com`, no path).
    pub primary_origin: String,
    /// More exact public HTTPS origins the sign-in or the site uses.
    #[serde(default)]
    pub additional_origins: Vec<String>,
    pub ceremony: BeginCeremony,
}

/// A ceremony as it began: the capability or link is in this answer only.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct BegunCeremony {
    pub ceremony_id: Uuid,
    pub profile_id: Uuid,
    pub kind: CeremonyKind,
    pub state: CeremonyState,
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: jiff::Timestamp,
    /// `device`: the single-use capability to present, as `Authorization: Bearer`, with the
    /// session at `handoff_url` (never the API credential there).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capability: Option<String>,
    /// `device`: where the session goes, once.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff_url: Option<String>,
    /// `remote`: the five-minute, single-use link `Continue in web browser` opens.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continue_url: Option<String>,
}

/// `POST /v1/browser/profiles` answer.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CreatedBrowserProfile {
    pub profile: BrowserProfile,
    pub ceremony: BegunCeremony,
}

/// `GET /v1/browser/ceremonies/{id}`: secret-free.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CeremonyStatus {
    pub ceremony_id: Uuid,
    pub profile_id: Uuid,
    pub kind: CeremonyKind,
    pub state: CeremonyState,
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: jiff::Timestamp,
    /// The profile's state now; none once a rejected ceremony removed the unused profile.
    pub profile_state: Option<ProfileState>,
}

impl CeremonyKind {
    pub const fn as_str(self) -> &'static str {
        match self {
            CeremonyKind::Device => "device",
            CeremonyKind::Remote => "remote",
        }
    }

    pub fn parse(text: &str) -> Option<CeremonyKind> {
        [CeremonyKind::Device, CeremonyKind::Remote]
            .into_iter()
            .find(|kind| kind.as_str() == text)
    }
}

impl CeremonyState {
    pub const ALL: [CeremonyState; 6] = [
        CeremonyState::Open,
        CeremonyState::Active,
        CeremonyState::Completed,
        CeremonyState::Rejected,
        CeremonyState::Expired,
        CeremonyState::Cancelled,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            CeremonyState::Open => "open",
            CeremonyState::Active => "active",
            CeremonyState::Completed => "completed",
            CeremonyState::Rejected => "rejected",
            CeremonyState::Expired => "expired",
            CeremonyState::Cancelled => "cancelled",
        }
    }

    pub fn parse(text: &str) -> Option<CeremonyState> {
        CeremonyState::ALL.into_iter().find(|state| state.as_str() == text)
    }

    /// Whether it can still change (the browser role knows how).
    pub const fn is_open(self) -> bool {
        matches!(self, CeremonyState::Open | CeremonyState::Active)
    }
}

/// How an approved browser action was allowed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ApprovedFor {
    /// `Allow once` (`approve_once`).
    Once,
    /// By a task permission: the one its decision granted, or one in force that covered it.
    Task,
}

impl ApprovedFor {
    pub const fn as_str(self) -> &'static str {
        match self {
            ApprovedFor::Once => "once",
            ApprovedFor::Task => "task",
        }
    }

    pub fn parse(text: &str) -> Option<ApprovedFor> {
        [ApprovedFor::Once, ApprovedFor::Task]
            .into_iter()
            .find(|value| value.as_str() == text)
    }
}

/// A task permission: within one run, the browser actions on `origins` that are not among
/// `exceptions`, at most `max_actions` of them until `expires_at`, unless stopped first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TaskPermission {
    pub task_permission_id: Uuid,
    pub session_id: Uuid,
    pub run_id: Uuid,
    pub profile_id: Uuid,
    /// The site scope: the profile's origins.
    pub origins: Vec<String>,
    /// What it never covers.
    pub exceptions: Vec<domain::browser::Exception>,
    pub max_actions: u32,
    /// Actions allowed by it so far, the one whose approval granted it included.
    pub actions_used: u32,
    pub remaining_actions: u32,
    #[schema(value_type = String, format = DateTime)]
    pub expires_at: jiff::Timestamp,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: jiff::Timestamp,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub stopped_at: Option<jiff::Timestamp>,
    /// Whether it still allows actions: not stopped, not expired, actions left, and its run
    /// not over.
    pub active: bool,
}

/// `GET /v1/browser/task-permissions`: the active ones, newest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TaskPermissionList {
    pub task_permissions: Vec<TaskPermission>,
}

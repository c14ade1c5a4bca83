//! The problem document (RFC 9457), the body of every error answer.

use domain::approval::ApprovalStatus;
use domain::run::RunState;
use serde::{Deserialize, Serialize};
use utoipa::ToSchema;
use uuid::Uuid;

/// The media type of a problem document.
pub const CONTENT_TYPE: &str = "application/problem+json";

/// An error answer. `code` is the stable member clients match on; `type` carries the same code
/// as a URN; `title` is fixed per code; `detail` explains this occurrence. The other members are
/// present only with the codes that name them.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Problem {
    /// `urn:steward:problem:<code>`.
    #[serde(rename = "type")]
    pub kind: String,
    /// Fixed per code.
    pub title: String,
    /// The HTTP status, repeated.
    pub status: u16,
    /// The stable machine-readable error code.
    pub code: String,
    /// What went wrong this time, for people.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// The request member, parameter or header at fault (`validation_failed`, some
    /// `invalid_request`, `unknown_artifact`, `unknown_folder`, …), e.g. `limits.max_steps`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    /// The run that holds the session (`active_run_exists`, `session_has_active_run`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<Uuid>,
    /// The scope the route needs (`insufficient_scope`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required_scope: Option<String>,
    /// The largest upload allowed (`artifact_too_large`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_bytes: Option<u64>,
    /// The resource's current revision (`revision_mismatch`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revision: Option<i32>,
    /// The state the run ended in (`run_not_active`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub state: Option<RunState>,
    /// How the approval was resolved (`approval_already_resolved`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution: Option<ApprovalStatus>,
    /// A draft's newest version on the server (`revision_mismatch` of a draft save), so the
    /// client can keep both.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<Box<crate::email::Draft>>,
    /// The version the refused save carried (`revision_mismatch` of a draft save).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub local: Option<crate::email::DraftContent>,
}

//! Memory (`/v1/memories`, mounted with `AGENT_MEMORY_API_ENABLED=1`): the governed beliefs the
//! agent formed about the owner, each reviewable. Every belief formed from mail arrives flagged
//! for review; a deleted statement does not form again (its source messages stay).

pub use domain::memory::{MemoryKind, MemoryOrigin, MemoryStatus};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

/// `GET /v1/memories` parameters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListMemories {
    /// Only beliefs in this state.
    pub status: Option<MemoryStatus>,
    /// Only beliefs of this kind.
    pub kind: Option<MemoryKind>,
    /// Only those flagged for review (`true`) or only those not flagged (`false`).
    pub needs_review: Option<bool>,
    /// The `next_cursor` of the previous page; omit it for the first.
    pub cursor: Option<String>,
    /// Page size (default 50).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u32>,
}

/// A belief.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Memory {
    pub memory_id: Uuid,
    pub kind: MemoryKind,
    /// The belief, one short statement.
    pub statement: String,
    pub status: MemoryStatus,
    /// Flagged for review: not recalled until the owner marks it reviewed.
    pub needs_review: bool,
    /// What it was formed from.
    pub origin: MemoryOrigin,
    #[schema(value_type = String, format = DateTime)]
    pub formed_at: jiff::Timestamp,
    /// When the owner marked it reviewed or not true.
    #[schema(value_type = Option<String>, format = DateTime)]
    pub reviewed_at: Option<jiff::Timestamp>,
}

/// A page of beliefs, newest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct MemoryPage {
    pub memories: Vec<Memory>,
    /// Present while more beliefs follow.
    pub next_cursor: Option<String>,
}

/// One piece of a belief's evidence: a conversation's run, or a message of a mail thread
/// (references only; a source the owner deleted shows as none).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct MemoryEvidence {
    pub session_id: Option<Uuid>,
    pub run_id: Option<Uuid>,
    pub email_thread_id: Option<Uuid>,
    pub provider_message_id: Option<String>,
    #[schema(value_type = String, format = DateTime)]
    pub noted_at: jiff::Timestamp,
}

/// A run whose prompt received a belief.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct MemoryRecall {
    pub run_id: Uuid,
    pub session_id: Uuid,
    /// Its place among the beliefs that run received (1 first).
    pub rank: i16,
    #[schema(value_type = String, format = DateTime)]
    pub recalled_at: jiff::Timestamp,
}

/// A belief with its evidence (oldest first) and the runs that recalled it (newest first; at
/// most 50 of each).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct MemoryDetail {
    pub memory: Memory,
    pub evidence: Vec<MemoryEvidence>,
    pub recalls: Vec<MemoryRecall>,
}

/// The owner's review of a belief (`POST /v1/memories/{memory_id}/review`).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum ReviewMemory {
    /// `Mark reviewed`: recalled from now on, flagged no more. (A variant with no members is an
    /// empty struct: serde lets a unit variant of a tagged enum carry unknown members.)
    MarkReviewed {},
    /// `Not true`: never recalled, and not formed again.
    NotTrue {},
    /// `Not relevant here`: never recalled into this conversation again.
    NotRelevantHere { session_id: Uuid },
}

/// The beliefs a run's prompt received, in rank order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RecalledMemories {
    pub memories: Vec<Memory>,
}

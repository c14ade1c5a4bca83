//! The owner's calls (`/v1/calls`, mounted with `AGENT_CALL_ENABLED=1`): inbound messages taken
//! on the public number and outbound calls placed from approved briefs. A call's transcript and
//! summary are the owner's only, and are gone once the record expired (30 days after the call
//! ended) or the owner deleted it.

pub use domain::call::{CallDirection, CallFailure, CallState};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

/// `GET /v1/calls` parameters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListCalls {
    /// The `next_cursor` of the previous page; omit it for the first.
    pub cursor: Option<String>,
    /// Page size (default 50).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u32>,
}

/// A call in the list.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CallSummary {
    pub call_id: Uuid,
    pub direction: CallDirection,
    pub state: CallState,
    /// The other party's number (E.164); none once the call was deleted.
    pub counterpart: Option<String>,
    /// When the record was made: the approval of an outbound brief, or the inbound call's
    /// settlement.
    #[schema(value_type = String, format = DateTime)]
    pub created_at: jiff::Timestamp,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub dispatched_at: Option<jiff::Timestamp>,
    #[schema(value_type = Option<String>, format = DateTime)]
    pub finished_at: Option<jiff::Timestamp>,
    pub duration_seconds: Option<i32>,
    /// Why an outbound call was not placed, or was settled without its result.
    pub failure: Option<CallFailure>,
    /// The transcript and summary were removed 30 days after the call ended.
    pub expired: bool,
}

/// An outbound call's brief, word for word as approved.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CallBrief {
    pub to: String,
    pub purpose: String,
    pub may_say: String,
    pub voicemail_message: Option<String>,
}

/// Who spoke a turn of a transcript.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Speaker {
    /// The assistant.
    Assistant,
    /// The other person on the call.
    Other,
}

/// One turn of a transcript.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct TranscriptTurn {
    pub speaker: Speaker,
    pub text: String,
}

/// `GET /v1/calls/{call_id}`: the call with its brief, transcript and summary.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct Call {
    pub call: CallSummary,
    /// Outbound: the brief as approved, and the configuration revision it is pinned to.
    pub brief: Option<CallBrief>,
    pub revision: Option<String>,
    /// Outbound: the conversation the brief was approved in.
    pub session_id: Option<Uuid>,
    /// `human`, `voicemail`, `no-answer`, … as the provider reported.
    pub answered_by: Option<String>,
    /// What was said; none until the call ends, and none once expired.
    pub transcript: Option<Vec<TranscriptTurn>>,
    pub summary: Option<String>,
}

/// `GET /v1/calls`: newest first.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct CallPage {
    pub calls: Vec<CallSummary>,
    pub next_cursor: Option<String>,
}

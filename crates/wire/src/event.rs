//! The event vocabulary: every kind of event a session's log can hold, each with its typed
//! payload, and the transient output relayed beside them.
//!
//! This module is the only place an event kind or a payload member is spelled. The store writes
//! [`Event`] values, the agent reads them back to build the model's context, and the stream
//! handler sends them as the `data` of each frame ([`Frame`]). On the wire an event is
//! `{"kind": "<kind>", "payload": {…}}`.

use domain::approval::{ApprovalStatus, InvocationState, Risk};
use domain::run::RunState;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use utoipa::ToSchema;
use uuid::Uuid;

/// Declares a kind-tagged enum from one list of `Variant(Payload) = "kind"`, so that the serde
/// tag, the OpenAPI discriminator and `kind()` cannot disagree.
macro_rules! kinds {
    (
        $(#[$meta:meta])*
        pub enum $name:ident {
            $( $(#[$doc:meta])* $variant:ident($payload:ty) = $kind:tt, )*
        }
    ) => {
        $(#[$meta])*
        pub enum $name {
            $( $(#[$doc])* #[serde(rename = $kind)] $variant($payload), )*
        }

        impl $name {
            /// Every kind, in declaration order.
            pub const KINDS: &[&str] = &[$($kind),*];

            /// The kind, as the `kind` member and the SSE `event:` field carry it.
            pub const fn kind(&self) -> &'static str {
                match self {
                    $( $name::$variant(_) => $kind, )*
                }
            }
        }
    };
}

kinds! {
    /// One persisted event: its kind and typed payload.
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
    #[serde(tag = "kind", content = "payload")]
    pub enum Event {
        /// The owner's message (or a schedule's instruction) that starts a run.
        UserMessageCreated(UserMessageCreated) = "user.message.created",
        /// One model step: its text and the tool calls it asked for.
        AssistantMessage(AssistantMessage) = "assistant.message",
        /// A side-effecting tool call is being dispatched (committed before the call).
        ToolStarted(ToolStarted) = "tool.started",
        /// A tool call settled.
        ToolResult(ToolResult) = "tool.result",
        /// The run waits for the owner's decision on a tool call.
        ApprovalRequested(ApprovalRequested) = "approval.requested",
        /// The owner decided.
        ApprovalResolved(ApprovalResolved) = "approval.resolved",
        /// The run waits for the owner's answer.
        QuestionAsked(QuestionAsked) = "question.asked",
        /// The owner answered.
        QuestionAnswered(QuestionAnswered) = "question.answered",
        /// The run ended `completed`.
        RunCompleted(RunCompleted) = "run.completed",
        /// The run ended `failed`.
        RunFailed(RunFailed) = "run.failed",
        /// The run ended `cancelled`.
        RunCancelled(RunCancelled) = "run.cancelled",
        /// A mail write or send whose outcome is unknown; it will be reconciled, never repeated.
        MailOutcomeUnknown(MailOutcomeUnknown) = "mail.outcome_unknown",
        /// The reconciliation of a mail write or send settled.
        MailReconciled(MailReconciled) = "mail.reconciled",
    }
}

impl Event {
    /// Whether this event ends its run.
    pub const fn ends_run(&self) -> bool {
        matches!(
            self,
            Event::RunCompleted(_) | Event::RunFailed(_) | Event::RunCancelled(_)
        )
    }

    /// The known kind spelled `kind`, as a static string, and whether it ends its run; `None` for
    /// a kind this vocabulary does not have.
    pub fn stored_kind(kind: &str) -> Option<(&'static str, bool)> {
        let known = *Event::KINDS.iter().find(|known| **known == kind)?;
        let ends = matches!(known, "run.completed" | "run.failed" | "run.cancelled");
        Some((known, ends))
    }

    /// The stored form: the kind and the payload as JSON.
    pub fn to_stored(&self) -> Result<(&'static str, Value), serde_json::Error> {
        let value = serde_json::to_value(self)?;
        let payload = match value {
            Value::Object(mut object) => object.remove("payload").unwrap_or(Value::Null),
            other => other,
        };
        Ok((self.kind(), payload))
    }

    /// Reads a stored kind and payload back.
    pub fn from_stored(kind: &str, payload: Value) -> Result<Event, serde_json::Error> {
        let mut object = serde_json::Map::new();
        object.insert("kind".to_owned(), Value::String(kind.to_owned()));
        object.insert("payload".to_owned(), payload);
        serde_json::from_value(Value::Object(object))
    }
}

/// A persisted event as the stream sends it: the `data` of a frame whose SSE `id` is `seq`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Frame {
    /// The event's position in its session, contiguous from 1; also the SSE `id`.
    pub seq: i64,
    /// The run the event belongs to.
    pub run_id: Option<Uuid>,
    #[schema(value_type = String, format = DateTime)]
    pub created_at: jiff::Timestamp,
    #[serde(flatten)]
    pub event: Event,
}

impl Frame {
    /// The JSON of a stored event's frame, built around its stored payload (JSON text, as the
    /// database returns it) without parsing it: the stream's replay path, which sends stored
    /// events as written. The result is the JSON [`Frame`] serializes to, up to the payload's
    /// member order and whitespace. `kind` must be one of [`Event::KINDS`].
    pub fn data_of_stored(
        seq: i64,
        run_id: Option<Uuid>,
        created_at: jiff::Timestamp,
        kind: &str,
        payload: &str,
    ) -> String {
        use std::fmt::Write as _;
        let mut data = String::with_capacity(payload.len() + 128);
        let _ = write!(data, "{{\"seq\":{seq},\"run_id\":");
        match run_id {
            Some(run) => {
                let _ = write!(data, "\"{run}\"");
            }
            None => data.push_str("null"),
        }
        // Kinds and timestamps never need escaping: kinds are the vocabulary's, and a timestamp
        // is RFC 3339 digits and separators.
        let _ = write!(
            data,
            ",\"created_at\":\"{created_at}\",\"kind\":\"{kind}\",\"payload\":{payload}}}"
        );
        data
    }
}

/// The `data` of one frame of a session's event stream: a persisted event beside its position,
/// or transient output.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(untagged)]
pub enum StreamData {
    Persisted(Frame),
    Transient(Transient),
}

kinds! {
    /// Transient output of a run: relayed as it is produced, never stored, sent without an SSE
    /// `id` (so it never moves a client's replay cursor). On the wire: `{"kind", "run_id", "text"}`.
    #[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
    #[serde(tag = "kind")]
    pub enum Transient {
        /// A piece of the model's reply text.
        AssistantDelta(Delta) = "assistant.delta",
        /// A piece of the model's reasoning summary.
        ReasoningDelta(Delta) = "reasoning.delta",
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct Delta {
    pub run_id: Uuid,
    pub text: String,
}

/// Transient output on its way from a worker to the API processes (the `NOTIFY` payload).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TransientNotice {
    pub session_id: Uuid,
    #[serde(flatten)]
    pub output: Transient,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UserMessageCreated {
    pub run_id: Uuid,
    pub message: UserMessage,
    /// Present when a schedule's occurrence started the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schedule: Option<ScheduledBy>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UserMessage {
    pub text: Option<String>,
    pub attachments: Vec<Attachment>,
}

/// An artifact attached to a message, as it was when the message was sent.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Attachment {
    pub artifact_id: Uuid,
    pub filename: String,
    pub media_type: String,
    pub size_bytes: i64,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ScheduledBy {
    pub schedule_id: Uuid,
    pub occurrence_id: Uuid,
    #[schema(value_type = String, format = DateTime)]
    pub scheduled_for: jiff::Timestamp,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct AssistantMessage {
    pub run_id: Uuid,
    /// The run's step number, from 1.
    pub step: i32,
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: StepUsage,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolCall {
    /// The model's id of the call, unique within its run.
    pub call_id: String,
    pub tool: String,
    /// The arguments as the model gave them.
    #[schema(value_type = Object)]
    pub arguments: Value,
}

/// What one model step used.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct StepUsage {
    pub input_tokens: i64,
    pub output_tokens: i64,
    /// A decimal string.
    pub cost: String,
}

/// What a whole run used.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunUsage {
    pub steps: u32,
    pub model_calls: u32,
    pub tool_calls: u32,
    pub input_tokens: i64,
    pub output_tokens: i64,
    /// A decimal string.
    pub cost: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolStarted {
    pub run_id: Uuid,
    pub invocation_id: Uuid,
    pub call_id: String,
    pub tool: String,
    /// The tool's risk, as the roster gave it (absent in events recorded before it was kept,
    /// and for a tool outside the roster).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk: Option<Risk>,
}

/// How a client must treat content: tool output is data, never instructions.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum Trust {
    ToolOutput,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ToolResult {
    pub run_id: Uuid,
    pub invocation_id: Uuid,
    pub call_id: String,
    pub tool: String,
    pub status: InvocationState,
    /// Why it did not succeed (for example `approval.denied`, `tool.outcome_unknown`).
    pub code: Option<String>,
    /// The tool's risk, as in `tool.started`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub risk: Option<Risk>,
    pub trust: Trust,
    /// The tool's output.
    pub result: Value,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalRequested {
    pub run_id: Uuid,
    pub approval_id: Uuid,
    pub invocation_id: Uuid,
    pub tool: String,
    pub risk: Risk,
    /// The arguments as shown: strings over 512 characters truncated.
    #[schema(value_type = Object)]
    pub arguments: Value,
    /// JSON pointer of each truncated string → lowercase hex SHA-256 of the whole string.
    pub argument_digests: std::collections::BTreeMap<String, String>,
    pub status: ApprovalStatus,
    /// A browser action's offer of a task permission; absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_offer: Option<Box<domain::browser::TaskOffer>>,
    /// Set when the call was approved as it was recorded: a task permission covered it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_for: Option<crate::browser::ApprovedFor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_permission_id: Option<Uuid>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct ApprovalResolved {
    pub run_id: Uuid,
    pub approval_id: Uuid,
    pub invocation_id: Uuid,
    pub tool: String,
    pub status: ApprovalStatus,
    /// How an approved call was allowed (once, or for the task); absent otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub approved_for: Option<crate::browser::ApprovedFor>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub task_permission_id: Option<Uuid>,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QuestionAsked {
    pub run_id: Uuid,
    pub question_id: Uuid,
    pub text: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct QuestionAnswered {
    pub run_id: Uuid,
    pub question_id: Uuid,
    pub answer: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunCompleted {
    pub run_id: Uuid,
    /// Always `completed`.
    pub state: RunState,
    pub usage: RunUsage,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunFailed {
    pub run_id: Uuid,
    /// Always `failed`.
    pub state: RunState,
    /// Why, for example `limit.max_steps` or `model.unavailable`.
    pub code: String,
    pub detail: String,
    pub usage: RunUsage,
}

/// Why a run was cancelled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum CancelReason {
    /// The owner asked.
    Requested,
    /// Its deadline passed.
    Deadline,
    /// A frozen draft's send, made void by a later save of the draft before anyone approved it.
    DraftChanged,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct RunCancelled {
    pub run_id: Uuid,
    /// Always `cancelled`.
    pub state: RunState,
    pub reason: CancelReason,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MailOutcomeUnknown {
    pub run_id: Uuid,
    pub invocation_id: Uuid,
    pub call_id: String,
    pub tool: String,
    pub account_id: String,
    /// `create_draft` or `send_message`.
    pub operation: String,
    /// Always `mail.outcome_unknown`.
    pub code: String,
}

/// What a reconciliation found.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum ReconciliationOutcome {
    /// The message exists.
    Found,
    /// The searches ran out without finding it (which proves nothing either way).
    NotFound,
}

impl ReconciliationOutcome {
    /// The stored state of a settled reconciliation, the same word as on the wire.
    pub const fn as_str(self) -> &'static str {
        match self {
            ReconciliationOutcome::Found => "found",
            ReconciliationOutcome::NotFound => "not_found",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct MailReconciled {
    pub run_id: Uuid,
    pub invocation_id: Uuid,
    pub call_id: Option<String>,
    pub tool: Option<String>,
    pub account_id: String,
    /// `create_draft` or `send_message`.
    pub operation: String,
    pub state: ReconciliationOutcome,
    /// The provider thread of the message found.
    pub thread_id: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run_cancelled() -> Event {
        Event::RunCancelled(RunCancelled {
            run_id: Uuid::nil(),
            state: RunState::Cancelled,
            reason: CancelReason::Deadline,
        })
    }

    #[test]
    fn an_event_is_kind_tagged_and_round_trips_through_its_stored_form() {
        let event = run_cancelled();
        let (kind, payload) = event.to_stored().expect("serializable");
        assert_eq!(kind, "run.cancelled");
        assert_eq!(
            payload,
            serde_json::json!({ "run_id": Uuid::nil(), "state": "cancelled", "reason": "deadline" })
        );
        assert_eq!(Event::from_stored(kind, payload).expect("parses"), event);
        assert!(event.ends_run());
    }

    #[test]
    fn kinds_are_unique_and_match_the_serde_tag() {
        let mut seen = std::collections::HashSet::new();
        for kind in Event::KINDS {
            assert!(seen.insert(kind), "{kind} twice");
        }
        let (kind, _) = run_cancelled().to_stored().expect("serializable");
        assert_eq!(serde_json::to_value(run_cancelled()).expect("json")["kind"], kind);
    }

    #[test]
    fn unknown_kinds_and_members_are_refused() {
        assert!(Event::from_stored("run.exploded", serde_json::json!({})).is_err());
        let payload = serde_json::json!({ "run_id": Uuid::nil(), "state": "cancelled", "reason": "deadline", "x": 1 });
        assert!(Event::from_stored("run.cancelled", payload).is_err());
    }

    #[test]
    fn a_frame_is_the_event_beside_its_position() {
        let frame = Frame {
            seq: 7,
            run_id: Some(Uuid::nil()),
            created_at: jiff::Timestamp::UNIX_EPOCH,
            event: run_cancelled(),
        };
        let value = serde_json::to_value(&frame).expect("json");
        assert_eq!(value["seq"], 7);
        assert_eq!(value["kind"], "run.cancelled");
        assert_eq!(value["payload"]["reason"], "deadline");
        assert_eq!(value["created_at"], "1970-01-01T00:00:00Z");
    }

    #[test]
    fn a_stored_frame_is_the_json_the_typed_frame_serializes_to() {
        let event = Event::UserMessageCreated(UserMessageCreated {
            run_id: Uuid::now_v7(),
            message: UserMessage {
                text: Some("quote \" backslash \\ line\nbreak é".into()),
                attachments: Vec::new(),
            },
            schedule: None,
        });
        let created_at: jiff::Timestamp = "2026-11-23T10:11:12.345678Z".parse().expect("timestamp");
        for (run_id, event) in [(Some(Uuid::now_v7()), event), (None, run_cancelled())] {
            let frame = Frame {
                seq: 42,
                run_id,
                created_at,
                event: event.clone(),
            };
            let (kind, payload) = event.to_stored().expect("serializable");
            let stored = Frame::data_of_stored(42, run_id, created_at, kind, &payload.to_string());
            let parsed: Frame = serde_json::from_str(&stored).expect("a frame");
            assert_eq!(parsed, frame);
            assert_eq!(
                serde_json::from_str::<Value>(&stored).expect("json"),
                serde_json::to_value(&frame).expect("json")
            );
            assert!(!stored.contains('\n'), "one SSE data line: {stored}");
        }
        assert_eq!(Event::stored_kind("run.failed"), Some(("run.failed", true)));
        assert_eq!(Event::stored_kind("tool.result"), Some(("tool.result", false)));
        assert_eq!(Event::stored_kind("run.exploded"), None);
        for kind in Event::KINDS {
            let ends = Event::stored_kind(kind).expect("known").1;
            assert_eq!(ends, kind.starts_with("run."), "{kind}");
        }
    }

    #[test]
    fn stored_states_are_the_wire_words() {
        for outcome in [ReconciliationOutcome::Found, ReconciliationOutcome::NotFound] {
            assert_eq!(serde_json::json!(outcome), serde_json::json!(outcome.as_str()));
        }
    }

    #[test]
    fn transient_output_is_flat() {
        let notice = TransientNotice {
            session_id: Uuid::nil(),
            output: Transient::AssistantDelta(Delta {
                run_id: Uuid::nil(),
                text: "hi".into(),
            }),
        };
        let value = serde_json::to_value(&notice).expect("json");
        assert_eq!(value["kind"], "assistant.delta");
        assert_eq!(value["text"], "hi");
        let back: TransientNotice = serde_json::from_value(value).expect("parses");
        assert_eq!(back, notice);
        assert_eq!(back.output.kind(), "assistant.delta");
    }
}

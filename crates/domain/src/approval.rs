//! Approvals and tool invocations: the closed vocabularies and the argument display rule.

use serde_json::{Map, Value};
use sha2::{Digest, Sha256};

/// An approval's status. The vocabulary is closed: `PENDING` until decided; `APPROVED` or
/// `DENIED` by the owner; `CANCELLED` when the run was cancelled first; `EXPIRED` when the run's
/// deadline passed first. Only `PENDING` ever changes, and only once.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum ApprovalStatus {
    Pending,
    Approved,
    Denied,
    Cancelled,
    Expired,
}

impl ApprovalStatus {
    pub const ALL: [ApprovalStatus; 5] = [
        ApprovalStatus::Pending,
        ApprovalStatus::Approved,
        ApprovalStatus::Denied,
        ApprovalStatus::Cancelled,
        ApprovalStatus::Expired,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            ApprovalStatus::Pending => "PENDING",
            ApprovalStatus::Approved => "APPROVED",
            ApprovalStatus::Denied => "DENIED",
            ApprovalStatus::Cancelled => "CANCELLED",
            ApprovalStatus::Expired => "EXPIRED",
        }
    }

    pub fn parse(text: &str) -> Option<ApprovalStatus> {
        ApprovalStatus::ALL.into_iter().find(|status| status.as_str() == text)
    }
}

/// How much harm a tool can do; shown on approval cards.
#[derive(
    Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, serde::Serialize, serde::Deserialize, utoipa::ToSchema,
)]
#[serde(rename_all = "snake_case")]
pub enum Risk {
    /// Reads only.
    Low,
    /// Changes the owner's own data inside the service.
    Medium,
    /// Acts outside the service (sends, posts, calls).
    High,
}

impl Risk {
    pub fn parse(text: &str) -> Option<Risk> {
        [Risk::Low, Risk::Medium, Risk::High]
            .into_iter()
            .find(|risk| risk.as_str() == text)
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            Risk::Low => "low",
            Risk::Medium => "medium",
            Risk::High => "high",
        }
    }
}

/// A tool the agent may be offered, built-in or a mail account's: what the model sees (its name,
/// description and the JSON Schema of its arguments), the scope naming what it may do, its risk,
/// and whether each call waits for the owner's approval.
#[derive(Clone, Debug, PartialEq)]
pub struct Tool {
    pub name: String,
    pub description: String,
    pub parameters: serde_json::Value,
    pub scope: String,
    pub risk: Risk,
    pub needs_approval: bool,
}

/// Where one tool invocation is. `dispatching` is written (and committed) before a
/// side-effecting tool is called; an invocation found still `dispatching` after a crash becomes
/// `outcome_unknown` and is never retried.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, utoipa::ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum InvocationState {
    Queued,
    AwaitingApproval,
    AwaitingAnswer,
    Approved,
    Denied,
    Dispatching,
    Succeeded,
    Failed,
    OutcomeUnknown,
    Cancelled,
}

impl InvocationState {
    pub const ALL: [InvocationState; 10] = [
        InvocationState::Queued,
        InvocationState::AwaitingApproval,
        InvocationState::AwaitingAnswer,
        InvocationState::Approved,
        InvocationState::Denied,
        InvocationState::Dispatching,
        InvocationState::Succeeded,
        InvocationState::Failed,
        InvocationState::OutcomeUnknown,
        InvocationState::Cancelled,
    ];

    pub const fn as_str(self) -> &'static str {
        match self {
            InvocationState::Queued => "queued",
            InvocationState::AwaitingApproval => "awaiting_approval",
            InvocationState::AwaitingAnswer => "awaiting_answer",
            InvocationState::Approved => "approved",
            InvocationState::Denied => "denied",
            InvocationState::Dispatching => "dispatching",
            InvocationState::Succeeded => "succeeded",
            InvocationState::Failed => "failed",
            InvocationState::OutcomeUnknown => "outcome_unknown",
            InvocationState::Cancelled => "cancelled",
        }
    }

    pub fn parse(text: &str) -> Option<InvocationState> {
        InvocationState::ALL.into_iter().find(|state| state.as_str() == text)
    }

    /// Whether the model has been (or will be) told the outcome and nothing more happens.
    pub const fn is_settled(self) -> bool {
        matches!(
            self,
            InvocationState::Denied
                | InvocationState::Succeeded
                | InvocationState::Failed
                | InvocationState::OutcomeUnknown
                | InvocationState::Cancelled
        )
    }
}

/// Strings longer than this are truncated in an approval's displayed arguments.
pub const DISPLAY_STRING_MAX_CHARS: usize = 512;

/// The arguments as an approval shows them, and the digests proving the truncated values.
#[derive(Clone, Debug, PartialEq)]
pub struct DisplayedArguments {
    pub arguments: Value,
    /// JSON Pointer of each truncated string → lowercase hex SHA-256 of its full UTF-8 value.
    pub argument_digests: Map<String, Value>,
}

/// Shows `arguments` whole except strings over [`DISPLAY_STRING_MAX_CHARS`] characters, which
/// are cut to that length with a digest entry keyed by their JSON Pointer.
pub fn display_arguments(arguments: &Value) -> DisplayedArguments {
    let mut digests = Map::new();
    let arguments = truncate(arguments, String::new(), &mut digests);
    DisplayedArguments {
        arguments,
        argument_digests: digests,
    }
}

fn truncate(value: &Value, pointer: String, digests: &mut Map<String, Value>) -> Value {
    match value {
        Value::String(text) if text.chars().count() > DISPLAY_STRING_MAX_CHARS => {
            let digest: String = Sha256::digest(text.as_bytes())
                .iter()
                .map(|b| format!("{b:02x}"))
                .collect();
            digests.insert(pointer, Value::String(digest));
            Value::String(text.chars().take(DISPLAY_STRING_MAX_CHARS).collect())
        }
        Value::Array(items) => Value::Array(
            items
                .iter()
                .enumerate()
                .map(|(index, item)| truncate(item, format!("{pointer}/{index}"), digests))
                .collect(),
        ),
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(key, item)| {
                    (
                        key.clone(),
                        truncate(item, format!("{pointer}/{}", pointer_token(key)), digests),
                    )
                })
                .collect(),
        ),
        other => other.clone(),
    }
}

/// `key` as one JSON Pointer reference token (RFC 6901: `~` as `~0`, `/` as `~1`).
pub fn pointer_token(key: &str) -> String {
    key.replace('~', "~0").replace('/', "~1")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn statuses_are_a_closed_uppercase_set() {
        for status in ApprovalStatus::ALL {
            assert_eq!(ApprovalStatus::parse(status.as_str()), Some(status));
            assert_eq!(status.as_str(), status.as_str().to_uppercase());
        }
        assert_eq!(ApprovalStatus::parse("pending"), None);
    }

    #[test]
    fn the_wire_spelling_is_the_stored_one() {
        for status in ApprovalStatus::ALL {
            assert_eq!(json!(status), json!(status.as_str()));
        }
        for state in InvocationState::ALL {
            assert_eq!(json!(state), json!(state.as_str()));
        }
        for risk in [Risk::Low, Risk::Medium, Risk::High] {
            assert_eq!(json!(risk), json!(risk.as_str()));
        }
    }

    #[test]
    fn long_strings_are_truncated_with_digests_of_the_whole_value() {
        let body = "é".repeat(600);
        let shown = display_arguments(
            &json!({ "to": "a@example.com", "body": body, "parts": ["x", "y".repeat(513)], "a/b": "z".repeat(700) }),
        );
        assert_eq!(shown.arguments["to"], "a@example.com");
        assert_eq!(shown.arguments["body"].as_str().map(|s| s.chars().count()), Some(512));
        assert_eq!(shown.arguments["parts"][0], "x");
        let expected: String = Sha256::digest(body.as_bytes())
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        assert_eq!(shown.argument_digests["/body"], expected);
        assert!(shown.argument_digests.contains_key("/parts/1"));
        assert!(shown.argument_digests.contains_key("/a~1b"));
        assert_eq!(shown.argument_digests.len(), 3);

        let exact = display_arguments(&json!({ "text": "x".repeat(512) }));
        assert!(exact.argument_digests.is_empty(), "512 characters are shown whole");
    }
}

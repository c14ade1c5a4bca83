//! The model provider interface: one request/response shape for every provider.

use futures_util::future::BoxFuture;
use serde_json::Value;

/// One message of the model's context.
#[derive(Clone, Debug, PartialEq)]
pub enum ChatMessage {
    System(String),
    User(String),
    Assistant { text: String, tool_calls: Vec<ToolCall> },
    Tool { call_id: String, content: String },
}

/// A tool the model may call.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    pub name: String,
    pub description: String,
    /// JSON Schema of the arguments.
    pub parameters: Value,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ModelRequest {
    pub model: String,
    pub reasoning_effort: Option<String>,
    pub messages: Vec<ChatMessage>,
    pub tools: Vec<ToolSpec>,
    /// The most output tokens the answer may take (`max_tokens`), when bounded.
    pub max_output_tokens: Option<u32>,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Usage {
    pub input_tokens: i64,
    pub output_tokens: i64,
    /// Whether the provider reported the usage (when not, the counts are zero and prove nothing).
    pub reported: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct ModelResponse {
    pub text: String,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
}

/// Receives transient output while the model streams: text deltas and raw reasoning (which is
/// shown as an indicator and never persisted).
pub trait Deltas: Send + Sync {
    fn text(&self, delta: &str);
    fn reasoning(&self, delta: &str);
}

#[derive(Debug, thiserror::Error)]
pub enum ModelError {
    #[error("the model provider could not be reached: {0}")]
    Transport(String),
    #[error("the model provider answered HTTP {status}: {detail}")]
    Status { status: u16, detail: String },
    #[error("the model provider's answer was malformed: {0}")]
    Protocol(String),
}

impl ModelError {
    /// What failed, without the provider's words (an answer's body may echo the prompt): for
    /// logs, which carry no content.
    pub fn kind(&self) -> String {
        match self {
            ModelError::Transport(_) => "transport".to_owned(),
            ModelError::Status { status, .. } => format!("HTTP {status}"),
            ModelError::Protocol(_) => "malformed answer".to_owned(),
        }
    }
}

/// A model call in progress: the answer, or why there is none.
pub type Completion<'a> = BoxFuture<'a, Result<ModelResponse, ModelError>>;

/// A model provider.
pub trait ModelProvider: Send + Sync {
    fn complete<'a>(&'a self, request: &'a ModelRequest, deltas: &'a dyn Deltas) -> Completion<'a>;
}

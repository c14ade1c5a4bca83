//! What running a tool came to, shared by the tool box and the tools kept in their own modules.

use mail_mcp::tools::Reconciliation;
use serde_json::Value;

/// What running a tool came to.
#[derive(Debug, PartialEq)]
pub enum ToolOutcome {
    Succeeded(Value),
    /// It did not happen (or did nothing); the model is told why.
    Failed {
        code: &'static str,
        message: String,
    },
    /// It may or may not have happened; never retried. A mail write or send carries what its
    /// read-only reconciliation needs.
    Uncertain {
        code: &'static str,
        message: String,
        reconciliation: Option<Reconciliation>,
    },
}

/// A tool's refusal or failure: it did not happen, and the model is told `message`.
pub fn failed(code: &'static str, message: impl Into<String>) -> ToolOutcome {
    ToolOutcome::Failed {
        code,
        message: message.into(),
    }
}

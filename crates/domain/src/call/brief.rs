//! An outbound call's brief: what the owner approves, word for word.

use serde_json::Value;

use super::configuration::{CallConfiguration, is_e164};

/// The longest purpose, "may say" and voicemail message of a brief, in characters.
pub const PURPOSE_MAX_CHARS: usize = 500;
pub const MAY_SAY_MAX_CHARS: usize = 2000;
pub const VOICEMAIL_MAX_CHARS: usize = 500;

/// An outbound call as the owner approves it, word for word.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Brief {
    /// The recipient, E.164.
    pub to: String,
    /// Why the call is made.
    pub purpose: String,
    /// What the assistant may say; nothing else.
    pub may_say: String,
    /// What to leave on voicemail; without it the assistant hangs up on voicemail.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub voicemail_message: Option<String>,
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BriefError {
    #[error("the brief is not valid: {0}")]
    Shape(String),
    #[error("the brief's `{member}` {reason}")]
    Member { member: &'static str, reason: String },
}

fn bounded(member: &'static str, value: &str, max: usize) -> Result<(), BriefError> {
    let reason = if value.trim().is_empty() {
        "is empty".to_owned()
    } else if value.chars().count() > max {
        format!("is longer than {max} characters")
    } else if value.chars().any(|c| c.is_control() && c != '\n') {
        "holds control characters".to_owned()
    } else {
        return Ok(());
    };
    Err(BriefError::Member { member, reason })
}

impl Brief {
    /// A brief from the tool's arguments: exactly `to`, `purpose`, `may_say` and an optional
    /// `voicemail_message`, each bounded; the recipient E.164 and not the public number itself.
    pub fn parse(value: &Value, config: &CallConfiguration) -> Result<Brief, BriefError> {
        let brief: Brief =
            serde_json::from_value(value.clone()).map_err(|error| BriefError::Shape(error.to_string()))?;
        if !is_e164(&brief.to) {
            return Err(BriefError::Member {
                member: "to",
                reason: "must be an E.164 number such as +15551234567".into(),
            });
        }
        if brief.to == config.phone_number {
            return Err(BriefError::Member {
                member: "to",
                reason: "is the public number itself".into(),
            });
        }
        bounded("purpose", &brief.purpose, PURPOSE_MAX_CHARS)?;
        bounded("may_say", &brief.may_say, MAY_SAY_MAX_CHARS)?;
        if let Some(message) = &brief.voicemail_message {
            bounded("voicemail_message", message, VOICEMAIL_MAX_CHARS)?;
        }
        Ok(brief)
    }
}

//! The call configuration file (`{config_dir}/callprov-configuration.json`): a closed schema
//! (unknown members refused) and its [`Revision`]. Pure: the roles read the file themselves,
//! operator-writable only (`hardening::config_file::read_protected`), and parse it here.
//!
//! The revision is the SHA-256 of the normalized configuration: the validated members written
//! as compact JSON with their keys in a fixed (alphabetical) order and an absent
//! `assistant_name` left out. Formatting and member order in the file do not change it; any
//! change of a value, or adding `assistant_name`, does. Outbound approvals are pinned to it.

use std::fmt;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

/// The only `version` this release reads.
pub const VERSION: u32 = 1;
/// The longest call the reviewed profile allows, in minutes (the spec's limit).
pub const MAX_DURATION_MINUTES: u32 = 5;
/// The name the assistant gives when the configuration names none: the service's own.
pub const DEFAULT_ASSISTANT_NAME: &str = "Steward";
/// The path every webhook URL ends in: the one route the public proxy exposes.
pub const WEBHOOK_PATH: &str = "/webhooks/callprov";

/// Why a configuration was refused. The messages name the member, never a secret.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("the call configuration is not valid: {0}")]
    Json(String),
    #[error("the call configuration's `{member}` {reason}")]
    Member { member: &'static str, reason: String },
}

fn member(member: &'static str, reason: impl Into<String>) -> ConfigError {
    ConfigError::Member {
        member,
        reason: reason.into(),
    }
}

/// The file as written: every member named, nothing else accepted.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct File {
    version: u32,
    account_id: String,
    phone_number: String,
    public_name: String,
    #[serde(default)]
    assistant_name: Option<String>,
    public_profile: String,
    voice: String,
    max_duration_minutes: u32,
    webhook_url: String,
}

/// A validated call configuration.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CallConfiguration {
    /// A local label for the provider account; not a credential.
    pub account_id: String,
    /// The public number, E.164.
    pub phone_number: String,
    /// The owner's name as callers hear it.
    pub public_name: String,
    /// The assistant's own name, when the operator chose one.
    pub assistant_name: Option<String>,
    /// Reviewed public facts: the only thing about the owner the assistant may tell a caller.
    pub public_profile: String,
    /// The provider's voice.
    pub voice: String,
    pub max_duration_minutes: u32,
    /// Where the provider delivers signed webhooks.
    pub webhook_url: String,
    revision: Revision,
}

/// The normalized form whose SHA-256 is the revision: keys alphabetical, compact.
#[derive(Serialize)]
struct Normalized<'a> {
    account_id: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    assistant_name: Option<&'a str>,
    max_duration_minutes: u32,
    phone_number: &'a str,
    public_name: &'a str,
    public_profile: &'a str,
    version: u32,
    voice: &'a str,
    webhook_url: &'a str,
}

/// A configuration's revision: 64 lowercase hex characters.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Revision(String);

impl Revision {
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl fmt::Display for Revision {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Whether `number` is E.164: `+`, a non-zero digit, then 1 to 14 more digits.
pub fn is_e164(number: &str) -> bool {
    let Some(digits) = number.strip_prefix('+') else {
        return false;
    };
    (2..=15).contains(&digits.len()) && digits.bytes().all(|b| b.is_ascii_digit()) && !digits.starts_with('0')
}

fn text(name: &'static str, value: String, max_chars: usize) -> Result<String, ConfigError> {
    if value.trim().is_empty() {
        return Err(member(name, "is empty"));
    }
    if value.chars().count() > max_chars {
        return Err(member(name, format!("is longer than {max_chars} characters")));
    }
    if value.chars().any(|c| c.is_control() && c != '\n') {
        return Err(member(name, "holds control characters"));
    }
    Ok(value)
}

impl CallConfiguration {
    /// Validates the file's bytes.
    pub fn parse(bytes: &[u8]) -> Result<CallConfiguration, ConfigError> {
        let file: File = serde_json::from_slice(bytes).map_err(|error| ConfigError::Json(error.to_string()))?;
        if file.version != VERSION {
            return Err(member("version", format!("must be {VERSION}")));
        }
        let account_id = text("account_id", file.account_id, 64)?;
        if !account_id
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
        {
            return Err(member("account_id", "may hold only letters, digits, `.`, `_` and `-`"));
        }
        if !is_e164(&file.phone_number) {
            return Err(member("phone_number", "must be an E.164 number such as +15551234567"));
        }
        let public_name = text("public_name", file.public_name, 100)?;
        let assistant_name = file
            .assistant_name
            .map(|name| text("assistant_name", name, 60))
            .transpose()?;
        let public_profile = text("public_profile", file.public_profile, 4000)?;
        let voice = text("voice", file.voice, 100)?;
        if !(1..=MAX_DURATION_MINUTES).contains(&file.max_duration_minutes) {
            return Err(member(
                "max_duration_minutes",
                format!("must be from 1 to {MAX_DURATION_MINUTES}"),
            ));
        }
        let webhook_url = file.webhook_url;
        let rest = webhook_url
            .strip_prefix("https://")
            .ok_or_else(|| member("webhook_url", "must be an https URL"))?;
        if !rest.ends_with(WEBHOOK_PATH) || rest.len() == WEBHOOK_PATH.len() || rest.contains(['?', '#', ' ', '@']) {
            return Err(member(
                "webhook_url",
                format!("must be https://<public host>{WEBHOOK_PATH}, with no query"),
            ));
        }
        let mut config = CallConfiguration {
            account_id,
            phone_number: file.phone_number,
            public_name,
            assistant_name,
            public_profile,
            voice,
            max_duration_minutes: file.max_duration_minutes,
            webhook_url,
            revision: Revision(String::new()),
        };
        config.revision = config.compute_revision();
        Ok(config)
    }

    fn compute_revision(&self) -> Revision {
        let normalized = Normalized {
            account_id: &self.account_id,
            assistant_name: self.assistant_name.as_deref(),
            max_duration_minutes: self.max_duration_minutes,
            phone_number: &self.phone_number,
            public_name: &self.public_name,
            public_profile: &self.public_profile,
            version: VERSION,
            voice: &self.voice,
            webhook_url: &self.webhook_url,
        };
        let bytes = serde_json::to_vec(&normalized).expect("plain strings and numbers serialize");
        let digest = Sha256::digest(&bytes);
        Revision(digest.iter().map(|byte| format!("{byte:02x}")).collect())
    }

    /// The revision outbound approvals are pinned to.
    pub fn revision(&self) -> &Revision {
        &self.revision
    }

    /// The name the assistant gives itself.
    pub fn assistant(&self) -> &str {
        self.assistant_name.as_deref().unwrap_or(DEFAULT_ASSISTANT_NAME)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    pub(crate) fn sample() -> Value {
        json!({
            "version": 1,
            "account_id": "home",
            "phone_number": "+15551230000",
            "public_name": "Alex Rivera",
            "public_profile": "Alex is a carpenter in Portland. Alex takes commissions by email.",
            "voice": "maya",
            "max_duration_minutes": 5,
            "webhook_url": "https://steward.example.org/webhooks/callprov",
        })
    }

    fn parse(value: &Value) -> Result<CallConfiguration, ConfigError> {
        CallConfiguration::parse(value.to_string().as_bytes())
    }

    fn with(change: impl FnOnce(&mut serde_json::Map<String, Value>)) -> Value {
        let mut value = sample();
        change(value.as_object_mut().expect("an object"));
        value
    }

    #[test]
    fn a_reviewed_configuration_reads() {
        let config = parse(&sample()).expect("valid");
        assert_eq!(config.assistant(), DEFAULT_ASSISTANT_NAME);
        assert_eq!(config.revision().as_str().len(), 64);
        assert!(
            config
                .revision()
                .as_str()
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase())
        );
    }

    #[test]
    fn the_revision_ignores_formatting_and_changes_with_every_value() {
        let base = parse(&sample()).expect("valid");
        let pretty = serde_json::to_string_pretty(&sample()).expect("json");
        let reordered = {
            let object = sample();
            let mut members: Vec<(String, Value)> = object.as_object().expect("object").clone().into_iter().collect();
            members.reverse();
            let text: Vec<String> = members.iter().map(|(key, value)| format!("{key:?}: {value}")).collect();
            format!("{{ {} }}", text.join(",\n  "))
        };
        for text in [pretty, reordered] {
            let again = CallConfiguration::parse(text.as_bytes()).expect("valid");
            assert_eq!(again.revision(), base.revision(), "{text}");
        }
        let changes: Vec<(&str, Value)> = vec![
            ("account_id", json!("work")),
            ("phone_number", json!("+15551230001")),
            ("public_name", json!("Alex R.")),
            ("assistant_name", json!("Steward")),
            ("public_profile", json!("Alex is a carpenter.")),
            ("voice", json!("josh")),
            ("max_duration_minutes", json!(4)),
            ("webhook_url", json!("https://other.example.org/webhooks/callprov")),
        ];
        for (name, value) in changes {
            let changed = parse(&with(|object| {
                object.insert(name.into(), value.clone());
            }))
            .expect("valid");
            assert_ne!(
                changed.revision(),
                base.revision(),
                "changing `{name}` changes the revision"
            );
        }
    }

    #[test]
    fn adding_the_default_assistant_name_still_changes_the_revision() {
        let base = parse(&sample()).expect("valid");
        let named = parse(&with(|object| {
            object.insert("assistant_name".into(), json!(DEFAULT_ASSISTANT_NAME));
        }))
        .expect("valid");
        assert_eq!(named.assistant(), base.assistant());
        assert_ne!(named.revision(), base.revision());
    }

    #[test]
    fn unknown_members_and_bad_values_are_refused_by_name() {
        let cases: Vec<(Value, &str)> = vec![
            (
                with(|o| {
                    o.insert("persona".into(), json!("x"));
                }),
                "persona",
            ),
            (
                with(|o| {
                    o.insert("version".into(), json!(2));
                }),
                "version",
            ),
            (
                with(|o| {
                    o.remove("voice");
                }),
                "voice",
            ),
            (
                with(|o| {
                    o.insert("phone_number".into(), json!("5551230000"));
                }),
                "phone_number",
            ),
            (
                with(|o| {
                    o.insert("phone_number".into(), json!("+0551230000"));
                }),
                "phone_number",
            ),
            (
                with(|o| {
                    o.insert("phone_number".into(), json!("+1555123000012345"));
                }),
                "phone_number",
            ),
            (
                with(|o| {
                    o.insert("max_duration_minutes".into(), json!(6));
                }),
                "max_duration_minutes",
            ),
            (
                with(|o| {
                    o.insert("max_duration_minutes".into(), json!(0));
                }),
                "max_duration_minutes",
            ),
            (
                with(|o| {
                    o.insert(
                        "webhook_url".into(),
                        json!("http://steward.example.org/webhooks/callprov"),
                    );
                }),
                "webhook_url",
            ),
            (
                with(|o| {
                    o.insert("webhook_url".into(), json!("https://steward.example.org/hooks"));
                }),
                "webhook_url",
            ),
            (
                with(|o| {
                    o.insert("webhook_url".into(), json!("https:///webhooks/callprov"));
                }),
                "webhook_url",
            ),
            (
                with(|o| {
                    o.insert("public_profile".into(), json!("  "));
                }),
                "public_profile",
            ),
            (
                with(|o| {
                    o.insert("assistant_name".into(), json!(""));
                }),
                "assistant_name",
            ),
            (
                with(|o| {
                    o.insert("account_id".into(), json!("home account"));
                }),
                "account_id",
            ),
        ];
        for (value, name) in cases {
            let error = parse(&value).expect_err(name).to_string();
            assert!(error.contains(name), "{name}: {error}");
        }
    }
}

//! The messages the write and send tools create: checked arguments (recipients, subject, body)
//! built into an RFC 5322 message (`text/plain`, UTF-8) that names its tool invocation twice, so
//! a draft or send of unknown outcome can be found again without storing anything of its
//! content: a `Message-ID` derived from the invocation (searchable as `rfc822msgid:`, but the
//! provider may replace it on send) and an [`INVOCATION_HEADER`] it keeps.
//!
//! What the owner approves is what is sent: addresses are plain ASCII `local@domain`, and no
//! argument may hold invisible formatting characters (zero-width, bidirectional overrides) that
//! would make the approval show something other than what a recipient reads.

use base64::Engine;
use mail_builder::MessageBuilder;
use serde_json::Value;
use uuid::Uuid;

/// Recipients per header, and the longest subject and body accepted.
const MAX_RECIPIENTS: usize = 100;
const MAX_SUBJECT_CHARS: usize = 998;
const MAX_BODY_BYTES: usize = 1024 * 1024;
/// The right-hand side of every `Message-ID` this service creates.
const MESSAGE_ID_DOMAIN: &str = "steward.local";
/// The header naming the invocation (its UUID, hyphenless) in every message this service
/// creates; providers keep `X-` headers when they rewrite `Message-ID`.
pub const INVOCATION_HEADER: &str = "X-Steward-Invocation";

/// A checked message: what the owner approved, exactly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing {
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub bcc: Vec<String>,
    pub subject: String,
    pub body: String,
}

/// The `Message-ID` (without angle brackets) of the message an invocation creates.
pub fn message_id(invocation: Uuid) -> String {
    format!("{}@{MESSAGE_ID_DOMAIN}", invocation.simple())
}

/// The value of [`INVOCATION_HEADER`] for `invocation`.
pub fn invocation_tag(invocation: Uuid) -> String {
    invocation.simple().to_string()
}

/// Invisible formatting characters (Unicode category Cf, the ones in use): they can reorder or
/// hide text, so an approval could show one thing and the message say another.
fn is_format_character(c: char) -> bool {
    matches!(c,
        '\u{00AD}' | '\u{061C}' | '\u{180E}' | '\u{200B}'..='\u{200F}' | '\u{202A}'..='\u{202E}'
        | '\u{2060}'..='\u{2064}' | '\u{2066}'..='\u{206F}' | '\u{FEFF}' | '\u{FFF9}'..='\u{FFFB}')
}

/// One address: plain ASCII `local@domain`, no display name, nothing that could break out of a
/// header or look like another address.
fn address(text: &str) -> Option<String> {
    let text = text.trim();
    if !text.is_ascii() {
        return None;
    }
    let (local, domain) = text.split_once('@')?;
    let forbidden = |c: char| c.is_whitespace() || c.is_control() || "<>,;:\"()[]\\@".contains(c);
    let valid = !local.is_empty()
        && local.len() <= 64
        && !domain.is_empty()
        && domain.len() <= 253
        && domain.contains('.')
        && !local.chars().any(forbidden)
        && !domain.chars().any(forbidden)
        && !domain.starts_with('.')
        && !domain.ends_with('.');
    valid.then(|| text.to_owned())
}

fn addresses(arguments: &Value, field: &str, required: bool) -> Result<Vec<String>, String> {
    let list = match &arguments[field] {
        Value::Null if !required => return Ok(Vec::new()),
        Value::String(one) => vec![one.as_str()],
        Value::Array(items) => items
            .iter()
            .map(|item| item.as_str().ok_or_else(|| format!("`{field}` must hold strings")))
            .collect::<Result<_, _>>()?,
        _ => return Err(format!("`{field}` must be an address or a list of addresses")),
    };
    if required && list.is_empty() {
        return Err(format!("`{field}` needs at least one address"));
    }
    if list.len() > MAX_RECIPIENTS {
        return Err(format!("`{field}` holds more than {MAX_RECIPIENTS} addresses"));
    }
    list.into_iter()
        .map(|item| address(item).ok_or_else(|| format!("`{field}` holds an invalid address `{item}`")))
        .collect()
}

impl Outgoing {
    /// Checks the tool's arguments: `to` (required), `cc`, `bcc` (an address or a list),
    /// `subject` and `body` (strings). Nothing else is accepted.
    pub fn from_arguments(arguments: &Value) -> Result<Outgoing, String> {
        let Some(object) = arguments.as_object() else {
            return Err("the arguments must be an object".into());
        };
        if let Some(unknown) = object
            .keys()
            .find(|key| !["to", "cc", "bcc", "subject", "body"].contains(&key.as_str()))
        {
            return Err(format!("unknown argument `{unknown}`"));
        }
        let subject = arguments["subject"].as_str().ok_or("`subject` must be a string")?;
        if subject.chars().any(char::is_control) {
            return Err("`subject` must be one line".into());
        }
        if subject.chars().any(is_format_character) {
            return Err("`subject` holds invisible formatting characters".into());
        }
        if subject.chars().count() > MAX_SUBJECT_CHARS {
            return Err(format!("`subject` is longer than {MAX_SUBJECT_CHARS} characters"));
        }
        let body = arguments["body"].as_str().ok_or("`body` must be a string")?;
        if body.len() > MAX_BODY_BYTES {
            return Err("`body` is larger than 1 MiB".into());
        }
        if body.chars().any(is_format_character) {
            return Err("`body` holds invisible formatting characters".into());
        }
        Ok(Outgoing {
            to: addresses(arguments, "to", true)?,
            cc: addresses(arguments, "cc", false)?,
            bcc: addresses(arguments, "bcc", false)?,
            subject: subject.to_owned(),
            body: body.to_owned(),
        })
    }

    /// The RFC 5322 message of `invocation`, base64url-encoded as the provider's `raw` field
    /// wants it.
    pub fn raw(&self, invocation: Uuid) -> String {
        fn list(items: &[String]) -> Vec<&str> {
            items.iter().map(String::as_str).collect()
        }
        let mut builder = MessageBuilder::new()
            .message_id(message_id(invocation))
            .header(
                INVOCATION_HEADER,
                mail_builder::headers::raw::Raw::new(invocation_tag(invocation)),
            )
            .to(list(&self.to))
            .subject(self.subject.as_str())
            .text_body(self.body.as_str());
        if !self.cc.is_empty() {
            builder = builder.cc(list(&self.cc));
        }
        if !self.bcc.is_empty() {
            builder = builder.bcc(list(&self.bcc));
        }
        // Writing to memory cannot fail.
        let bytes = builder.write_to_vec().unwrap_or_default();
        base64::engine::general_purpose::URL_SAFE.encode(bytes)
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn builds_a_message_the_parser_reads_back_exactly() {
        let outgoing = Outgoing::from_arguments(&json!({
            "to": ["ada@example.org", "bob@example.net"], "cc": "carol@example.com",
            "subject": "Über den Plan: Friday", "body": "Hello Ada,\nsee you at 10.\n— Steward"
        }))
        .expect("valid");
        let invocation = Uuid::new_v4();
        let raw = base64::engine::general_purpose::URL_SAFE
            .decode(outgoing.raw(invocation))
            .expect("base64url");
        let parsed = mail_parser::MessageParser::default().parse(&raw).expect("parses");
        assert_eq!(parsed.subject(), Some("Über den Plan: Friday"));
        assert_eq!(parsed.message_id(), Some(message_id(invocation).as_str()));
        assert_eq!(
            parsed.header_raw(INVOCATION_HEADER).map(str::trim),
            Some(invocation_tag(invocation).as_str()),
            "the invocation is named in a header the provider keeps"
        );
        let to: Vec<&str> = parsed
            .to()
            .expect("to")
            .iter()
            .filter_map(|address| address.address())
            .collect();
        assert_eq!(to, ["ada@example.org", "bob@example.net"]);
        assert_eq!(
            parsed.cc().and_then(|cc| cc.first()).and_then(|a| a.address()),
            Some("carol@example.com")
        );
        // Lines travel with CRLF endings, as RFC 5322 requires.
        assert_eq!(
            parsed.body_text(0).map(|text| text.trim_end().replace("\r\n", "\n")),
            Some("Hello Ada,\nsee you at 10.\n— Steward".to_owned())
        );
    }

    #[test]
    fn refuses_arguments_that_could_forge_headers_or_are_incomplete() {
        let base = json!({ "to": "ada@example.org", "subject": "Hi", "body": "Text" });
        assert!(Outgoing::from_arguments(&base).is_ok());
        for (field, value, expected) in [
            ("to", json!([]), "at least one"),
            ("to", json!("ada@example.org\r\nBcc: eve@evil.test"), "invalid address"),
            ("to", json!("Ada <ada@example.org>"), "invalid address"),
            ("to", json!(42), "address or a list"),
            ("subject", json!("Hi\r\nBcc: eve@evil.test"), "one line"),
            // What the approval shows must be what is sent: no lookalike or invisible text.
            ("to", json!("аda@example.org"), "invalid address"),
            ("to", json!("ada@exam\u{200B}ple.org"), "invalid address"),
            ("subject", json!("Invoice \u{202E}fdp.exe"), "invisible formatting"),
            ("body", json!("Pay \u{200B}now"), "invisible formatting"),
            ("body", json!(null), "`body` must be a string"),
            ("attachment", json!("x"), "unknown argument"),
        ] {
            let mut arguments = base.clone();
            arguments[field] = value;
            let error = Outgoing::from_arguments(&arguments).expect_err(field);
            assert!(error.contains(expected), "{field}: {error}");
        }
    }
}

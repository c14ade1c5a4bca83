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
use domain::mail_tools::{check_body, check_subject, sendable_address};
use mail_builder::MessageBuilder;
use serde_json::Value;
use uuid::Uuid;

/// Recipients per header.
const MAX_RECIPIENTS: usize = 100;
/// The right-hand side of every `Message-ID` this service creates.
const MESSAGE_ID_DOMAIN: &str = "steward.local";
/// The header naming the invocation (its UUID, hyphenless) in every message this service
/// creates; providers keep `X-` headers when they rewrite `Message-ID`.
pub const INVOCATION_HEADER: &str = "X-Steward-Invocation";

/// A checked message: what the owner approved, exactly.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Outgoing {
    /// The account it must go from, when the call names it (a frozen draft's does).
    pub account_id: Option<String>,
    /// The provider's thread it replies in.
    pub thread_id: Option<String>,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub bcc: Vec<String>,
    pub subject: String,
    pub body: String,
}

/// What makes a message a reply in its thread (RFC 5322 section 3.6.4): the `Message-ID`s (without
/// angle brackets) it answers and of the conversation before it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReplyHeaders {
    pub in_reply_to: String,
    pub references: Vec<String>,
}

impl ReplyHeaders {
    /// The headers of a reply to a message with `message_id` and `references` (header values as
    /// the provider shows them, angle brackets and all); `None` without a `Message-ID`.
    pub fn answering(message_id: &str, references: &str) -> Option<ReplyHeaders> {
        let bare = |id: &str| id.trim().trim_start_matches('<').trim_end_matches('>').to_owned();
        let in_reply_to = bare(message_id);
        if in_reply_to.is_empty() {
            return None;
        }
        let mut chain: Vec<String> = references
            .split_whitespace()
            .map(bare)
            .filter(|id| !id.is_empty())
            .collect();
        chain.push(in_reply_to.clone());
        Some(ReplyHeaders {
            in_reply_to,
            references: chain,
        })
    }
}

/// The `Message-ID` (without angle brackets) of the message an invocation creates.
pub fn message_id(invocation: Uuid) -> String {
    format!("{}@{MESSAGE_ID_DOMAIN}", invocation.simple())
}

/// The value of [`INVOCATION_HEADER`] for `invocation`.
pub fn invocation_tag(invocation: Uuid) -> String {
    invocation.simple().to_string()
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
        .map(|item| sendable_address(item).ok_or_else(|| format!("`{field}` holds an invalid address `{item}`")))
        .collect()
}

impl Outgoing {
    /// Checks the tool's arguments: `to` (required), `cc`, `bcc` (an address or a list),
    /// `subject` and `body` (strings), and optionally `account_id` and `thread_id` (the
    /// provider's thread it replies in). Nothing else is accepted.
    pub fn from_arguments(arguments: &Value) -> Result<Outgoing, String> {
        let Some(object) = arguments.as_object() else {
            return Err("the arguments must be an object".into());
        };
        if let Some(unknown) = object
            .keys()
            .find(|key| !["account_id", "thread_id", "to", "cc", "bcc", "subject", "body"].contains(&key.as_str()))
        {
            return Err(format!("unknown argument `{unknown}`"));
        }
        // Ids only: a thread id goes into the provider's URL path, an account id names a tool.
        let optional = |field: &str, allowed: fn(char) -> bool| -> Result<Option<String>, String> {
            match &arguments[field] {
                Value::Null => Ok(None),
                Value::String(text) if !text.is_empty() && text.len() <= 64 && text.chars().all(allowed) => {
                    Ok(Some(text.clone()))
                }
                _ => Err(format!("`{field}` must be a provider id")),
            }
        };
        let account_id = optional("account_id", |c| {
            c.is_ascii_lowercase() || c.is_ascii_digit() || "_-".contains(c)
        })?;
        let thread_id = optional("thread_id", |c| c.is_ascii_alphanumeric())?;
        let subject = arguments["subject"].as_str().ok_or("`subject` must be a string")?;
        check_subject(subject)?;
        let body = arguments["body"].as_str().ok_or("`body` must be a string")?;
        check_body(body)?;
        Ok(Outgoing {
            account_id,
            thread_id,
            to: addresses(arguments, "to", true)?,
            cc: addresses(arguments, "cc", false)?,
            bcc: addresses(arguments, "bcc", false)?,
            subject: subject.to_owned(),
            body: body.to_owned(),
        })
    }

    /// [`Outgoing::from_arguments`] for `tool`, whose account an `account_id` must name.
    pub fn for_tool(arguments: &Value, tool: &domain::mail_tools::MailTool) -> Result<Outgoing, String> {
        let outgoing = Outgoing::from_arguments(arguments)?;
        match &outgoing.account_id {
            Some(account) if *account != tool.account_id => Err(format!(
                "`account_id` names `{account}`, but `{}` is account `{}`'s tool",
                tool.name, tool.account_id
            )),
            _ => Ok(outgoing),
        }
    }

    /// The RFC 5322 message of `invocation` (a reply when `reply` is given), base64url-encoded
    /// as the provider's `raw` field wants it.
    pub fn raw(&self, invocation: Uuid, reply: Option<&ReplyHeaders>) -> String {
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
        if let Some(reply) = reply {
            builder = builder
                .in_reply_to(reply.in_reply_to.as_str())
                .references(reply.references.as_slice());
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
            .decode(outgoing.raw(invocation, None))
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
    fn a_reply_names_the_message_it_answers_and_the_conversation_before_it() {
        let outgoing = Outgoing::from_arguments(&json!({
            "account_id": "work", "thread_id": "t1", "to": ["ada@example.org"], "cc": [],
            "subject": "Re: Plan", "body": "Yes."
        }))
        .expect("valid");
        assert_eq!(outgoing.thread_id.as_deref(), Some("t1"));
        assert_eq!(outgoing.account_id.as_deref(), Some("work"));
        let reply = ReplyHeaders::answering("<b@example.org>", "<a@example.org>").expect("has an id");
        let raw = base64::engine::general_purpose::URL_SAFE
            .decode(outgoing.raw(Uuid::new_v4(), Some(&reply)))
            .expect("base64url");
        let parsed = mail_parser::MessageParser::default().parse(&raw).expect("parses");
        assert_eq!(parsed.in_reply_to().as_text(), Some("b@example.org"));
        let references: Vec<&str> = parsed
            .references()
            .as_text_list()
            .map(|list| list.iter().map(|id| id.as_ref()).collect())
            .unwrap_or_default();
        assert_eq!(references, ["a@example.org", "b@example.org"]);
        assert_eq!(ReplyHeaders::answering("  ", ""), None);
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
            ("thread_id", json!("t1\r\nBcc: eve@evil.test"), "provider id"),
            ("account_id", json!(7), "provider id"),
        ] {
            let mut arguments = base.clone();
            arguments[field] = value;
            let error = Outgoing::from_arguments(&arguments).expect_err(field);
            assert!(error.contains(expected), "{field}: {error}");
        }
    }
}

//! A message as the mailbox projection keeps it, parsed from its RFC 5322 bytes by
//! `mail-parser`: the text a person reads (the first text part, or the HTML part reduced to
//! text; no remote content is ever fetched), attachment metadata without the bytes, and the
//! headers that say a message is bulk. Message content is for the projection and the model
//! only, marked untrusted there; it is never logged.

use mail_parser::{Address, MessageParser, MimeHeaders};
use serde::{Deserialize, Serialize};

/// The longest text kept for one message, in characters; a longer one is cut and marked.
pub const TEXT_MAX_CHARS: usize = 100_000;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ProjectError {
    #[error("the message is not an RFC 5322 message")]
    Unparseable,
}

/// A person or mailbox on a message (its address lowercased here), and what is known of an
/// attachment (never its bytes): the contract's own types, stored and served as they are.
pub use wire::email::{AttachmentMeta, Correspondent};

/// The headers that mark mail sent to many (RFC 2369, RFC 3834, `Precedence`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BulkHeaders {
    pub list_unsubscribe: bool,
    pub list_id: bool,
    /// `Precedence: bulk`, `list` or `junk`.
    pub precedence_bulk: bool,
    /// `Auto-Submitted` with any value but `no`.
    pub auto_submitted: bool,
}

impl BulkHeaders {
    pub fn any(self) -> bool {
        self.list_unsubscribe || self.list_id || self.precedence_bulk || self.auto_submitted
    }
}

/// One projected message.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProjectedMessage {
    pub from: Option<Correspondent>,
    pub to: Vec<Correspondent>,
    pub cc: Vec<Correspondent>,
    pub subject: Option<String>,
    pub date: Option<jiff::Timestamp>,
    /// Plain text: the first text part, or the HTML part reduced to text.
    pub text: String,
    /// The text was longer than [`TEXT_MAX_CHARS`] and was cut.
    pub text_cut: bool,
    pub attachments: Vec<AttachmentMeta>,
    pub bulk: BulkHeaders,
}

fn correspondents(address: Option<&Address<'_>>) -> Vec<Correspondent> {
    address
        .map(|address| {
            address
                .iter()
                .filter_map(|addr| {
                    let mailbox = addr.address()?.trim().to_lowercase();
                    (!mailbox.is_empty()).then(|| Correspondent {
                        name: addr
                            .name()
                            .map(str::trim)
                            .filter(|name| !name.is_empty())
                            .map(str::to_owned),
                        address: mailbox,
                    })
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Elements that start a line of their own when HTML is read as text. mail-parser's reducer
/// breaks lines only at `<br>` and `</p>`, so a heading ran into the paragraph after it.
const BLOCK_ELEMENTS: &[&str] = &[
    "address",
    "article",
    "blockquote",
    "div",
    "dl",
    "dt",
    "dd",
    "footer",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "header",
    "hr",
    "li",
    "ol",
    "p",
    "pre",
    "section",
    "table",
    "tr",
    "ul",
];

/// `html` with a `<br>` before every opening or closing tag of a block element.
fn with_block_breaks(html: &str) -> String {
    let mut out = String::with_capacity(html.len() + html.len() / 8);
    let mut rest = html;
    while let Some(at) = rest.find('<') {
        out.push_str(&rest[..at]);
        let tag = &rest[at + 1..];
        let name: String = tag
            .strip_prefix('/')
            .unwrap_or(tag)
            .chars()
            .take_while(char::is_ascii_alphanumeric)
            .collect::<String>()
            .to_ascii_lowercase();
        if BLOCK_ELEMENTS.contains(&name.as_str()) {
            out.push_str("<br>");
        }
        out.push('<');
        rest = tag;
    }
    out.push_str(rest);
    out
}

/// `text` with lines trimmed at their end, at most one blank line in a row, and none at either
/// end.
fn collapse_blank_lines(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut blank = 0;
    for line in text.lines().map(str::trim_end) {
        if line.trim().is_empty() {
            blank += 1;
            continue;
        }
        if !out.is_empty() {
            out.push_str(if blank > 0 { "\n\n" } else { "\n" });
        }
        blank = 0;
        out.push_str(line.trim_start());
    }
    out
}

/// Projects the RFC 5322 message `raw`.
pub fn project(raw: &[u8]) -> Result<ProjectedMessage, ProjectError> {
    // A stranger's bytes: a panic in the parser refuses the message instead of taking the role
    // down (and, the message being fetched again, down again). mail-parser 0.11 has a debug
    // assertion that malformed nested multiparts trip; `cargo xtask fuzz` found it, and
    // `tests/fuzz/corpus/nested-multipart-panic.eml` keeps the input.
    std::panic::catch_unwind(|| parse(raw)).unwrap_or(Err(ProjectError::Unparseable))
}

fn parse(raw: &[u8]) -> Result<ProjectedMessage, ProjectError> {
    let message = MessageParser::default().parse(raw).ok_or(ProjectError::Unparseable)?;
    let header_text = |name: &str| message.header_raw(name).map(|value| value.trim().to_ascii_lowercase());
    let bulk = BulkHeaders {
        list_unsubscribe: message.header_raw("List-Unsubscribe").is_some(),
        list_id: message.header_raw("List-Id").is_some(),
        precedence_bulk: header_text("Precedence")
            .is_some_and(|value| matches!(value.as_str(), "bulk" | "list" | "junk")),
        auto_submitted: header_text("Auto-Submitted").is_some_and(|value| value != "no"),
    };
    // A message without a plain part has its HTML part reduced to text (mail-parser's reducer,
    // with block elements broken onto lines of their own first).
    let full = match message.text_part(0).map(|part| &part.body) {
        Some(mail_parser::PartType::Html(html)) => {
            collapse_blank_lines(&mail_parser::decoders::html::html_to_text(&with_block_breaks(html)))
        }
        _ => message.body_text(0).map(|text| text.into_owned()).unwrap_or_default(),
    };
    let text_cut = full.chars().count() > TEXT_MAX_CHARS;
    let text = if text_cut {
        full.chars().take(TEXT_MAX_CHARS).collect()
    } else {
        full
    };
    let attachments = message
        .attachments()
        .map(|part| AttachmentMeta {
            filename: part.attachment_name().map(str::to_owned),
            media_type: part.content_type().map_or_else(
                || "application/octet-stream".to_owned(),
                |kind| match kind.subtype() {
                    Some(subtype) => format!("{}/{}", kind.ctype(), subtype).to_ascii_lowercase(),
                    None => kind.ctype().to_ascii_lowercase(),
                },
            ),
            size_bytes: part.len() as u64,
        })
        .collect();
    Ok(ProjectedMessage {
        from: correspondents(message.from()).into_iter().next(),
        to: correspondents(message.to()),
        cc: correspondents(message.cc()),
        subject: message.subject().map(|subject| subject.trim().to_owned()),
        date: message
            .date()
            .and_then(|date| jiff::Timestamp::from_second(date.to_timestamp()).ok()),
        text,
        text_cut,
        attachments,
        bulk,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use mail_builder::MessageBuilder;
    use mail_builder::headers::raw::Raw;

    #[test]
    fn a_plain_message_gives_its_people_subject_date_and_text() {
        let raw = MessageBuilder::new()
            .from(("Ada Lovelace", "Ada@Example.com"))
            .to(vec![("Owner", "owner@example.org")])
            .cc("bob@example.net")
            .subject("  Lunch on Friday?  ")
            .date(1_700_000_000_i64)
            .text_body("Are you free on Friday?\n\n> quoted earlier text\n")
            .write_to_vec()
            .expect("built");
        let message = project(&raw).expect("parses");
        assert_eq!(
            message.from,
            Some(Correspondent {
                name: Some("Ada Lovelace".into()),
                address: "ada@example.com".into()
            })
        );
        assert_eq!(message.to[0].address, "owner@example.org");
        assert_eq!(message.cc[0].address, "bob@example.net");
        assert_eq!(message.subject.as_deref(), Some("Lunch on Friday?"));
        assert_eq!(
            message.date,
            Some(jiff::Timestamp::from_second(1_700_000_000).expect("instant"))
        );
        assert!(message.text.starts_with("Are you free on Friday?"));
        assert!(!message.bulk.any());
        assert!(message.attachments.is_empty());
    }

    #[test]
    fn block_elements_of_html_start_lines_of_their_own() {
        let raw = MessageBuilder::new()
            .from("news@letters.example")
            .to("owner@example.org")
            .subject("This week")
            .html_body(
                "<h1>This week</h1><p>Issue 3: <b>five</b> picks.</p><ul><li>One</li><li>Two</li></ul><div>Bye</div>",
            )
            .write_to_vec()
            .expect("built");
        let message = project(&raw).expect("parses");
        let lines: Vec<&str> = message.text.lines().filter(|line| !line.is_empty()).collect();
        assert_eq!(
            lines,
            ["This week", "Issue 3: five picks.", "One", "Two", "Bye"],
            "{:?}",
            message.text
        );
        assert!(!message.text.contains("\n\n\n"));
    }

    #[test]
    fn html_is_reduced_to_text_and_attachments_keep_only_their_metadata() {
        let raw = MessageBuilder::new()
            .from("shop@example.com")
            .to("owner@example.org")
            .subject("Your receipt")
            .html_body(
                "<html><body><p>Thank you for your <b>order</b>.</p>\
                 <img src=\"https://tracker.example/pixel.gif\"><script>alert(1)</script></body></html>",
            )
            .attachment("application/pdf", "receipt.pdf", vec![7u8; 2048])
            .header("List-Unsubscribe", Raw::new("<https://example.com/u/1>"))
            .header("Precedence", Raw::new("Bulk"))
            .write_to_vec()
            .expect("built");
        let message = project(&raw).expect("parses");
        assert!(message.text.contains("Thank you for your order."), "{}", message.text);
        assert!(!message.text.contains('<'), "no markup: {}", message.text);
        assert!(
            !message.text.contains("tracker.example"),
            "no remote content: {}",
            message.text
        );
        assert_eq!(
            message.attachments,
            vec![AttachmentMeta {
                filename: Some("receipt.pdf".into()),
                media_type: "application/pdf".into(),
                size_bytes: 2048,
            }]
        );
        assert!(message.bulk.list_unsubscribe && message.bulk.precedence_bulk && message.bulk.any());
        assert!(!message.bulk.list_id);
    }

    #[test]
    fn a_long_text_is_cut_and_marked() {
        let raw = MessageBuilder::new()
            .from("a@example.com")
            .to("owner@example.org")
            .subject("Long")
            .text_body("é".repeat(TEXT_MAX_CHARS + 10))
            .write_to_vec()
            .expect("built");
        let message = project(&raw).expect("parses");
        assert!(message.text_cut);
        assert_eq!(message.text.chars().count(), TEXT_MAX_CHARS);
    }
}

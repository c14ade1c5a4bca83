//! The offline classifier: deterministic rules, the default for development and tests, and the
//! fallback when no model may be asked. Its version is stored with every assessment. The rules,
//! first match wins:
//!
//! 1. Mail the owner sent: Other, nothing to do.
//! 2. Bulk mail (`List-Unsubscribe`, `List-Id`, `Precedence: bulk|list|junk`, `Auto-Submitted`
//!    other than `no`): Other, nothing to do.
//! 3. A transactional sender (a local part such as `noreply`, `notifications`, `receipts`,
//!    `billing`, `orders`, `mailer-daemon`): Other, nothing to do.
//! 4. A known correspondent (someone the owner has written to): Important; `Needs reply` when
//!    the new text (quotes left out) asks a question and the owner is a direct recipient,
//!    otherwise `For your attention`.
//! 5. Anyone else: Other; `For your attention` when they ask the owner a question directly.
//!
//! The gist is the first line of the new text that is not a greeting, at most 140 characters,
//! else the subject.

use std::collections::HashSet;

pub use domain::email::{Importance, ReplyNeed};
use domain::feedback::ContentKind;
use serde::{Deserialize, Serialize};

use crate::project::ProjectedMessage;

/// The pinned classifier version (spec, Versioning 5).
pub const CLASSIFIER_VERSION: &str = "jev-1.13.0";

/// The longest gist, in characters.
pub const GIST_MAX_CHARS: usize = 140;

/// Which rule decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    FromOwner,
    Bulk,
    Transactional,
    KnownCorrespondent,
    UnknownSender,
    /// The agent's model decided (`classify::ModelClassifier`).
    Model,
    /// The junk first pass kept it out of the priority inbox (`junk`).
    JunkFilter,
}

impl Rule {
    /// The stored name (as serialized).
    pub fn as_str(self) -> &'static str {
        match self {
            Rule::FromOwner => "from_owner",
            Rule::Bulk => "bulk",
            Rule::Transactional => "transactional",
            Rule::KnownCorrespondent => "known_correspondent",
            Rule::UnknownSender => "unknown_sender",
            Rule::Model => "model",
            Rule::JunkFilter => "junk_filter",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Assessment {
    pub classifier: String,
    pub importance: Importance,
    pub reply_need: Option<ReplyNeed>,
    pub gist: String,
    pub rule: Rule,
}

/// What the classifier knows of the owner's mailbox.
#[derive(Clone, Copy, Debug)]
pub struct Mailbox<'a> {
    /// The owner's own addresses, lowercased.
    pub owner: &'a HashSet<String>,
    /// Addresses the owner has written to, lowercased.
    pub known: &'a HashSet<String>,
}

const TRANSACTIONAL_LOCAL_PARTS: &[&str] = &[
    "noreply",
    "no-reply",
    "no_reply",
    "donotreply",
    "do-not-reply",
    "notification",
    "notifications",
    "receipts",
    "receipt",
    "billing",
    "invoice",
    "invoices",
    "orders",
    "order",
    "alerts",
    "mailer-daemon",
    "postmaster",
    "bounce",
    "bounces",
];

fn is_transactional(address: &str) -> bool {
    let local = address.split('@').next().unwrap_or_default();
    TRANSACTIONAL_LOCAL_PARTS.contains(&local) || local.starts_with("noreply") || local.starts_with("no-reply")
}

/// The new text: quoted lines and everything after an attribution line left out.
fn new_lines(text: &str) -> impl Iterator<Item = &str> {
    text.lines()
        .map(str::trim)
        .take_while(|line| !(line.starts_with("On ") && line.ends_with("wrote:")) && *line != "-- ")
        .filter(|line| !line.starts_with('>'))
}

fn is_greeting(line: &str) -> bool {
    let lower = line.to_lowercase();
    let word = lower.split([' ', ',']).next().unwrap_or_default();
    matches!(word, "hi" | "hello" | "hey" | "dear" | "morning" | "evening") && line.len() < 40
}

fn gist(message: &ProjectedMessage) -> String {
    let line = new_lines(&message.text)
        .find(|line| !line.is_empty() && !is_greeting(line))
        .map(str::to_owned)
        .or_else(|| message.subject.clone().filter(|subject| !subject.is_empty()))
        .unwrap_or_else(|| "(no text)".to_owned());
    one_line(&line)
}

/// `text` on one line (whitespace runs made one space), cut to [`GIST_MAX_CHARS`] with `…`.
pub(crate) fn one_line(text: &str) -> String {
    let line = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if line.chars().count() <= GIST_MAX_CHARS {
        return line;
    }
    let mut cut: String = line.chars().take(GIST_MAX_CHARS - 1).collect();
    cut.push('…');
    cut
}

/// What kind of content `message` is, whoever assesses it: bulk headers make it `bulk`, a
/// machine sender (`noreply@`, `receipts@`, …) `transactional`, anything else `personal`. Feedback
/// about a kind of content names these.
pub fn kind(message: &ProjectedMessage) -> ContentKind {
    let sender = message
        .from
        .as_ref()
        .map(|from| from.address.as_str())
        .unwrap_or_default();
    if message.bulk.any() {
        ContentKind::Bulk
    } else if is_transactional(sender) {
        ContentKind::Transactional
    } else {
        ContentKind::Personal
    }
}

/// Assesses `message` by the rules above.
pub fn assess(message: &ProjectedMessage, mailbox: Mailbox<'_>) -> Assessment {
    let sender = message
        .from
        .as_ref()
        .map(|from| from.address.as_str())
        .unwrap_or_default();
    let direct = message.to.iter().any(|to| mailbox.owner.contains(&to.address));
    let asks = new_lines(&message.text).any(|line| line.contains('?'));
    let (rule, importance, reply_need) = if mailbox.owner.contains(sender) {
        (Rule::FromOwner, Importance::Other, None)
    } else if message.bulk.any() {
        (Rule::Bulk, Importance::Other, None)
    } else if is_transactional(sender) {
        (Rule::Transactional, Importance::Other, None)
    } else if mailbox.known.contains(sender) {
        let need = if asks && direct {
            ReplyNeed::NeedsReply
        } else {
            ReplyNeed::ForYourAttention
        };
        (Rule::KnownCorrespondent, Importance::Important, Some(need))
    } else {
        let need = (asks && direct).then_some(ReplyNeed::ForYourAttention);
        (Rule::UnknownSender, Importance::Other, need)
    };
    Assessment {
        classifier: CLASSIFIER_VERSION.to_owned(),
        importance,
        reply_need,
        gist: gist(message),
        rule,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::project::{BulkHeaders, Correspondent};

    fn message(from: &str, to: &str, subject: &str, text: &str) -> ProjectedMessage {
        let person = |address: &str| Correspondent {
            name: None,
            address: address.to_owned(),
        };
        ProjectedMessage {
            from: Some(person(from)),
            to: vec![person(to)],
            cc: Vec::new(),
            subject: Some(subject.to_owned()),
            date: None,
            text: text.to_owned(),
            text_cut: false,
            attachments: Vec::new(),
            bulk: BulkHeaders::default(),
        }
    }

    fn sets() -> (HashSet<String>, HashSet<String>) {
        (
            HashSet::from(["owner@example.org".to_owned()]),
            HashSet::from(["ada@example.com".to_owned()]),
        )
    }

    #[test]
    fn stored_names_are_the_serialized_names() {
        let named = |value: serde_json::Value, stored: &str| assert_eq!(value, serde_json::json!(stored));
        for importance in [Importance::Important, Importance::Other] {
            named(serde_json::to_value(importance).expect("json"), importance.as_str());
        }
        for need in [ReplyNeed::NeedsReply, ReplyNeed::ForYourAttention] {
            named(serde_json::to_value(need).expect("json"), need.as_str());
        }
        for rule in [
            Rule::FromOwner,
            Rule::Bulk,
            Rule::Transactional,
            Rule::KnownCorrespondent,
            Rule::UnknownSender,
            Rule::Model,
            Rule::JunkFilter,
        ] {
            named(serde_json::to_value(rule).expect("json"), rule.as_str());
        }
    }

    #[test]
    fn a_known_correspondent_asking_the_owner_needs_a_reply() {
        let (owner, known) = sets();
        let mailbox = Mailbox {
            owner: &owner,
            known: &known,
        };
        let asking = message(
            "ada@example.com",
            "owner@example.org",
            "Lunch",
            "Hi Sam,\nAre you free on Friday for lunch?\n\nOn Mon, Bob wrote:\n> Is this old?",
        );
        let assessment = assess(&asking, mailbox);
        assert_eq!(assessment.classifier, "jev-1.13.0");
        assert_eq!(assessment.importance, Importance::Important);
        assert_eq!(assessment.reply_need, Some(ReplyNeed::NeedsReply));
        assert_eq!(assessment.gist, "Are you free on Friday for lunch?");
        assert_eq!(assessment.rule, Rule::KnownCorrespondent);

        // A question only in the quoted part asks nothing new.
        let telling = message(
            "ada@example.com",
            "owner@example.org",
            "Re: Lunch",
            "Friday works.\n\n> Are you free on Friday?",
        );
        assert_eq!(assess(&telling, mailbox).reply_need, Some(ReplyNeed::ForYourAttention));
    }

    #[test]
    fn bulk_transactional_own_and_unknown_mail_is_other() {
        let (owner, known) = sets();
        let mailbox = Mailbox {
            owner: &owner,
            known: &known,
        };
        let mut newsletter = message("ada@example.com", "owner@example.org", "Weekly", "What's new?");
        newsletter.bulk.list_unsubscribe = true;
        let bulk = assess(&newsletter, mailbox);
        assert_eq!(
            (bulk.rule, bulk.importance, bulk.reply_need),
            (Rule::Bulk, Importance::Other, None)
        );

        let receipt = message(
            "no-reply@shop.example",
            "owner@example.org",
            "Receipt",
            "Did you order this?",
        );
        assert_eq!(assess(&receipt, mailbox).rule, Rule::Transactional);
        assert_eq!(assess(&receipt, mailbox).reply_need, None);

        let own = message("owner@example.org", "ada@example.com", "Lunch", "Shall we?");
        assert_eq!(assess(&own, mailbox).rule, Rule::FromOwner);

        let stranger = message("new@example.net", "owner@example.org", "Hello", "Could we talk?");
        let unknown = assess(&stranger, mailbox);
        assert_eq!(
            (unknown.importance, unknown.reply_need),
            (Importance::Other, Some(ReplyNeed::ForYourAttention))
        );
    }

    #[test]
    fn the_gist_is_one_bounded_line_or_the_subject() {
        let (owner, known) = sets();
        let mailbox = Mailbox {
            owner: &owner,
            known: &known,
        };
        let long = message("ada@example.com", "owner@example.org", "Plan", &"word ".repeat(100));
        let gist = assess(&long, mailbox).gist;
        assert_eq!(gist.chars().count(), GIST_MAX_CHARS);
        assert!(gist.ends_with('…'));
        let empty = message("ada@example.com", "owner@example.org", "Only a subject", "Hello,\n\n");
        assert_eq!(assess(&empty, mailbox).gist, "Only a subject");
    }
}

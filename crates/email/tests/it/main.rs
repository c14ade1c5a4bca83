//! Email mode against the mail provider stand-in (`testkit::gmail`) speaking the Gmail wire
//! format: the profile, history after a new message and after a label change, an expired history
//! id, and a raw message projected and assessed.

mod beliefs;
mod census;
mod classify;
mod drafts;
mod imports;
mod inbox;
mod junk;
mod junk_model;
mod junk_replay;
mod oneclick;
mod refresh;
mod unsubscribe;
mod writes;

use std::collections::HashSet;

use email::provider::{self, HistoryError};
use mail_mcp::gmail::{Credential, GmailClient};
use testkit::gmail::{FakeGmail, READONLY};

/// The assessing model `model` at the OpenAI-compatible API at `url`, at USD 1 per million
/// tokens either way, within `allowances`.
pub fn model_classifier(
    url: &str,
    model: &str,
    allowances: email::allowance::Allowances,
) -> email::classify::ModelClassifier {
    let dollar = domain::run::Cost::parse("1").expect("cost");
    email::classify::ModelClassifier {
        provider: model_client::openai::provider(
            model_client::endpoint::OpenAiEndpoint {
                base_url: url.to_owned(),
                api_key: None,
            },
            reqwest::Client::new(),
        ),
        model: model.to_owned(),
        prices: email::classify::Prices {
            input_per_mtok: dollar,
            output_per_mtok: dollar,
        },
        allowances,
    }
}

struct Reader {
    gmail: std::sync::Arc<GmailClient>,
    account: mail_mcp::accounts::ReadAccount,
}

impl Reader {
    fn credential(&self) -> Credential<'_> {
        Credential {
            account_id: self.account.account_id.as_str(),
            document: &self.account.read,
        }
    }
}

fn reader(fake: &FakeGmail, mailbox: &str) -> Reader {
    Reader {
        gmail: refresh::gmail(fake),
        account: refresh::account(fake, mailbox),
    }
}

/// A newsletter (HTML, `List-Unsubscribe`) to the owner.
pub fn newsletter() -> Vec<u8> {
    mail_builder::MessageBuilder::new()
        .from(("Weekly News", "news@letters.example"))
        .to("owner@example.org")
        .subject("This week")
        .html_body("<p>Ten things <b>worth</b> reading.</p>")
        .header(
            "List-Unsubscribe",
            mail_builder::headers::raw::Raw::new("<https://letters.example/u/1>"),
        )
        .write_to_vec()
        .expect("built")
}

#[tokio::test]
async fn history_brings_new_messages_and_label_changes_and_an_expired_start_asks_for_a_resync() {
    let fake = FakeGmail::start().await;
    fake.mailbox("owner", "owner@example.org");
    let reader = reader(&fake, "owner");

    let profile = provider::profile(&reader.gmail, reader.credential())
        .await
        .expect("profile");
    assert_eq!(profile.address, "owner@example.org");
    let start = profile.history_id;

    let first = fake.deliver_raw("owner", &newsletter(), &["INBOX", "UNREAD"], None);
    let second = fake.deliver(
        "owner",
        "ada@example.com",
        "Lunch",
        "Are you free on Friday?",
        &["INBOX"],
    );
    let changes = provider::changes_since(&reader.gmail, reader.credential(), &start)
        .await
        .expect("history");
    let added: Vec<&str> = changes.added.iter().map(|message| message.id.as_str()).collect();
    assert_eq!(added, [first.as_str(), second.as_str()]);
    assert!(changes.relabelled.is_empty());
    assert_ne!(changes.history_id, start);

    // Archived elsewhere: the thread's label change comes next, and no message is new.
    fake.relabel("owner", &first, &[], &["INBOX"]);
    let later = provider::changes_since(&reader.gmail, reader.credential(), &changes.history_id)
        .await
        .expect("history");
    assert!(later.added.is_empty());
    assert_eq!(
        later.relabelled.into_iter().collect::<Vec<_>>(),
        [(first.clone(), (first.clone(), vec!["UNREAD".to_owned()]))]
    );

    // Nothing new: the same history id back.
    let quiet = provider::changes_since(&reader.gmail, reader.credential(), &later.history_id)
        .await
        .expect("history");
    assert_eq!(
        quiet,
        provider::Changes {
            history_id: later.history_id.clone(),
            ..provider::Changes::default()
        }
    );

    fake.expire_history("owner");
    assert_eq!(
        provider::changes_since(&reader.gmail, reader.credential(), &start).await,
        Err(HistoryError::Expired)
    );
    let calls = fake.calls();
    assert!(
        calls.iter().all(|(_, scope, _)| scope == READONLY),
        "read document only: {calls:?}"
    );
}

#[tokio::test]
async fn a_raw_message_is_projected_and_assessed_as_bulk() {
    let fake = FakeGmail::start().await;
    fake.mailbox("owner", "owner@example.org");
    let reader = reader(&fake, "owner");
    let id = fake.deliver_raw("owner", &newsletter(), &["INBOX"], None);
    let raw = provider::raw_message(&reader.gmail, reader.credential(), &id)
        .await
        .expect("raw message");
    assert_eq!((raw.id.as_str(), raw.thread_id.as_str()), (id.as_str(), id.as_str()));
    assert_eq!(raw.label_ids, ["INBOX"]);
    let message = email::project::project(&raw.bytes).expect("projects");
    assert!(message.bulk.list_unsubscribe);
    assert!(message.text.contains("Ten things worth reading."), "{}", message.text);
    let owner = HashSet::from(["owner@example.org".to_owned()]);
    let known = HashSet::new();
    let assessment = email::assess::assess(
        &message,
        email::assess::Mailbox {
            owner: &owner,
            known: &known,
        },
    );
    assert_eq!(assessment.rule, email::assess::Rule::Bulk);

    // A message stored from fields comes back as RFC 5322 bytes too.
    let plain = fake.deliver(
        "owner",
        "ada@example.com",
        "Lunch",
        "Are you free on Friday?",
        &["INBOX"],
    );
    let raw = provider::raw_message(&reader.gmail, reader.credential(), &plain)
        .await
        .expect("raw message");
    let message = email::project::project(&raw.bytes).expect("projects");
    assert_eq!(message.subject.as_deref(), Some("Lunch"));
    assert_eq!(
        message.from.map(|from| from.address).as_deref(),
        Some("ada@example.com")
    );
}

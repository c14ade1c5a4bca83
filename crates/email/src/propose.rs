//! The agent's proposed replies, written by the async worker for a `propose_reply` operation and
//! landed as an `agent` revision of the conversation's draft, which the owner edits before any
//! Review & Send. With the model classifier the agent's model writes it (the newest message as
//! untrusted content, the owner's endorsed wording as the style to follow), within the email
//! cost allowances; offline, a short acknowledgement closed with the owner's newest endorsed
//! wording. Nothing here sends anything.

use store::{ClaimedProposal, EmailMessageRow, Landing};

use crate::classify::Classifier;
use crate::refresh::{Metered, RefreshError, Refresher, rebuild};

/// How much endorsed wording a proposal follows (the newest passages).
pub const STYLE_PASSAGES: i64 = 5;

/// What proposing came to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Proposed {
    /// Landed as this revision.
    Landed(i32),
    /// Not landed, with the stable code the operation failed with.
    Failed(&'static str),
}

/// The greeting's name: the display name's first word, else the address's local part.
fn first_name(message: &EmailMessageRow) -> Option<String> {
    let sender = message.sender.as_ref()?;
    let name = sender.name.as_deref().and_then(|name| name.split_whitespace().next());
    let local = sender.address.split('@').next();
    name.or(local).filter(|word| !word.is_empty()).map(str::to_owned)
}

/// The offline proposal: a greeting to the newest sender who is not the owner, an
/// acknowledgement (promising an answer when they asked something), and the owner's newest
/// endorsed wording as the closing, else `Best regards`.
pub fn offline_reply(messages: &[EmailMessageRow], owner: &str, style: &[String]) -> String {
    let theirs = messages.iter().rev().find(|message| {
        message
            .sender
            .as_ref()
            .is_some_and(|sender| !sender.address.eq_ignore_ascii_case(owner))
    });
    let greeting = match theirs.and_then(first_name) {
        Some(name) => format!("Hi {name},"),
        None => "Hello,".to_owned(),
    };
    let asks = theirs.is_some_and(|message| {
        message
            .body
            .lines()
            .take_while(|line| !line.trim_start().starts_with('>'))
            .any(|line| line.contains('?'))
    });
    let middle = if asks {
        "Thank you for your message. I will look into your question and get back to you soon."
    } else {
        "Thank you for your message."
    };
    let closing = style.first().map_or("Best regards", String::as_str);
    format!("{greeting}\n\n{middle}\n\n{closing}")
}

impl Refresher {
    /// Writes the claimed proposal and lands it (or settles it failed with a code).
    pub async fn propose(&self, claimed: &ClaimedProposal) -> Result<Proposed, RefreshError> {
        let Some(thread) = claimed.operation.thread else {
            return self.fail(claimed, "email.thread_gone").await;
        };
        let messages = self.store.email().thread_messages(thread).await?;
        if messages.is_empty() {
            return self.fail(claimed, "email.thread_gone").await;
        }
        let owner = self
            .store
            .email()
            .account(&claimed.operation.account_id)
            .await?
            .and_then(|account| account.address)
            .unwrap_or_default();
        let style = self.store.email().style(STYLE_PASSAGES).await?;
        let body = match self.classifier.as_ref() {
            Classifier::Offline => offline_reply(&messages, &owner, &style),
            Classifier::Model(model) => {
                let Some(newest) = messages.last() else {
                    return self.fail(claimed, "email.thread_gone").await;
                };
                let prepared = model.prepare_reply(&rebuild(newest), &style);
                match self
                    .within_allowances(&claimed.operation.account_id, &prepared, model.reply(&prepared))
                    .await?
                {
                    Metered::Answered(text) if !text.is_empty() => text,
                    Metered::Answered(_) | Metered::Failed => return self.fail(claimed, "model.error").await,
                    Metered::Spent(_) => return self.fail(claimed, "email.allowance_spent").await,
                }
            }
        };
        Ok(match self.store.email().land_proposal(claimed, &body).await? {
            Landing::Landed(revision) => Proposed::Landed(revision),
            Landing::DraftChanged => Proposed::Failed("email.draft_changed"),
        })
    }

    async fn fail(&self, claimed: &ClaimedProposal, code: &'static str) -> Result<Proposed, RefreshError> {
        self.store.email().fail_proposal(claimed, code).await?;
        Ok(Proposed::Failed(code))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn message(name: Option<&str>, address: &str, body: &str) -> EmailMessageRow {
        EmailMessageRow {
            provider_message_id: "m".into(),
            sender: Some(wire::email::Correspondent {
                name: name.map(str::to_owned),
                address: address.into(),
            }),
            recipients: Vec::new(),
            copied: Vec::new(),
            sent_at: jiff::Timestamp::UNIX_EPOCH,
            subject: "Plan".into(),
            body: body.into(),
            text_cut: false,
            attachments: Vec::new(),
            bulk: json!({}),
        }
    }

    #[test]
    fn the_offline_reply_greets_the_sender_and_closes_in_the_owners_words() {
        let thread = [
            message(
                Some("Ada Lovelace"),
                "ada@example.org",
                "Can we meet on Friday?\n> old?",
            ),
            message(None, "owner@example.org", "Let me check."),
        ];
        let reply = offline_reply(&thread, "Owner@example.org", &["Warm wishes, Sam".to_owned()]);
        assert_eq!(
            reply,
            "Hi Ada,\n\nThank you for your message. I will look into your question and get back to you soon.\n\nWarm wishes, Sam"
        );
        let plain = offline_reply(
            &[message(None, "bob@example.org", "FYI.\n> Why?")],
            "owner@example.org",
            &[],
        );
        assert_eq!(plain, "Hi bob,\n\nThank you for your message.\n\nBest regards");
    }
}

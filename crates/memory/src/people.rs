//! People: gathering the owner's correspondents from projected mail into records, with what the
//! offline reader learns from what each sender wrote, and the people the owner names in a
//! conversation ([`from_conversation`]). The reader is rule-based (no model), and a
//! message is untrusted content: it only ever yields a telephone number or a short statement
//! about its own sender, never an instruction.
//!
//! What the reader takes from a message's own text (quoted lines, starting `>`, and everything
//! from an `On … wrote:` or `-----Original Message-----` line on, are the owner's or others'
//! words and are skipped):
//!
//! | The sender writes | Learned |
//! |---|---|
//! | a line starting `Telephone`, `Tel`, `Phone`, `Mobile`, `Cell`, `T:` or `M:` with a number after it | the number, as their phone contact |
//! | a first-person sentence of the [`offline`](crate::offline) former's patterns that describes them (fact, preference, commitment, routine) | a fact (`Works at the observatory`) |
//!
//! At most [`MAX_FACTS`] facts come from one message.

use std::future::Future;
use std::pin::Pin;

use domain::ids::PrincipalId;
use domain::memory::MemoryKind;
use domain::people::{ContactKind, contact, name, relationship};
use store::Store;
use store::memory::Evidence;
use store::people::{Gathered, Heard, Learned, Mentioned, SentMessage};

use crate::{Proposal, Tally};

/// The most facts one message yields.
pub const MAX_FACTS: usize = 3;

/// The labels a line with a telephone number starts with (any case).
const PHONE_LABELS: &[&str] = &["telephone", "tel", "phone", "mobile", "cell", "t:", "m:"];

/// The sender's own words: up to the first line that starts a quotation, quoted lines skipped.
fn own_words(body: &str) -> String {
    let mut own = String::new();
    for line in body.lines() {
        let trimmed = line.trim();
        if trimmed.starts_with("-----Original Message-----")
            || (trimmed.starts_with("On ") && trimmed.ends_with("wrote:"))
        {
            break;
        }
        if trimmed.starts_with('>') {
            continue;
        }
        own.push_str(trimmed);
        own.push('\n');
    }
    own
}

/// The number on a labelled line, in its stored form.
fn phone(line: &str) -> Option<String> {
    let lower = line.to_ascii_lowercase();
    let label = PHONE_LABELS.iter().find(|label| lower.starts_with(*label))?;
    let rest = line.get(label.len()..)?;
    // A label, not the start of a longer word (`Cellar`).
    if rest.starts_with(char::is_alphabetic) {
        return None;
    }
    // Whatever separates the label from the number (`:`, `.`, `ephone`, spaces).
    let start = rest.find(|c: char| c == '+' || c.is_ascii_digit())?;
    let number = rest[start..].trim_end_matches(|c: char| !c.is_ascii_digit());
    contact(ContactKind::Phone, number).ok()
}

/// The people the owner named in a conversation: each relationship belief of the form
/// `X is the owner's R` (the offline former's, and the form the memory model is asked for)
/// whose `X` is a name and `R` a relationship. Other beliefs name no one.
pub fn from_conversation(proposals: &[Proposal]) -> Vec<Mentioned> {
    proposals
        .iter()
        .filter(|proposal| proposal.kind == MemoryKind::Relationship)
        .filter_map(|proposal| {
            let text = proposal.statement.as_str();
            let (who, relation) = ["is the owner's", "is the owner\u{2019}s"]
                .iter()
                .find_map(|link| text.split_once(&format!(" {link} ")))?;
            let relation = relation.trim_end_matches(['.', '!']);
            Some(Mentioned {
                name: name(who).ok()?,
                relationship: relationship(relation).ok()?,
                statement: proposal.statement.clone(),
            })
        })
        .collect()
}

/// What the offline reader learns about a message's sender from what they wrote.
pub fn read(heard: Heard<'_>) -> Vec<Learned> {
    let own = own_words(heard.body);
    let mut learned: Vec<Learned> = own.lines().filter_map(phone).map(Learned::Phone).collect();
    learned.dedup();
    learned.extend(
        crate::offline::propose(&own)
            .into_iter()
            .filter(|proposal| proposal.kind != MemoryKind::Relationship)
            .take(MAX_FACTS)
            .map(|proposal| Learned::Fact(proposal.statement)),
    );
    learned
}

/// How many messages one gathering takes at most.
pub const GATHER_BATCH: u32 = 200;

/// What gathering mail did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MailGathered {
    pub people: Gathered,
    /// The beliefs formed from what the owner wrote in the mail they sent (each flagged for
    /// review: it came from mail).
    pub beliefs: Tally,
}

/// A proposal in progress.
pub type Proposing<'a> = Pin<Box<dyn Future<Output = Vec<Proposal>> + Send + 'a>>;

/// What proposes beliefs from the owner's own words in a message they sent (quoted text
/// already skipped). The async worker's asks the memory model within the email allowances (the
/// words marked as untrusted mail); [`Offline`] is the rule-based former.
pub trait MailFormer: Sync {
    /// Proposes from `own_words`, written in a message sent from `account_id`.
    fn propose<'a>(&'a self, account_id: &'a str, own_words: &'a str) -> Proposing<'a>;
}

/// The rule-based former's patterns ([`crate::offline`]), free and without a model.
pub struct Offline;

impl MailFormer for Offline {
    fn propose<'a>(&'a self, _account_id: &'a str, own_words: &'a str) -> Proposing<'a> {
        Box::pin(std::future::ready(crate::offline::propose(own_words)))
    }
}

/// Forms the beliefs the owner's own words in `sent` (messages they sent, gathered) state, as
/// `former` proposes them, each with its message as evidence (flagged for review: mail).
pub async fn form_sent(
    store: &Store,
    principal: &PrincipalId,
    sent: Vec<SentMessage>,
    former: &dyn MailFormer,
) -> Result<Tally, store::StoreError> {
    let mut total = Tally::default();
    for sent in sent {
        let words = own_words(&sent.body);
        if words.trim().is_empty() {
            continue;
        }
        let proposals = former.propose(&sent.account_id, &words).await;
        let evidence = Evidence::Mail {
            thread: sent.thread,
            provider_message_id: sent.provider_message_id,
        };
        let tally = crate::form(store, principal, proposals, &evidence).await?;
        total.created += tally.created;
        total.known += tally.known;
        total.forbidden += tally.forbidden;
    }
    Ok(total)
}

/// Gathers every projected message not gathered yet into `principal`'s people, in batches,
/// and forms beliefs from the owner's own words in the mail they sent (proposed by `former`;
/// quoted text skipped); what was done in all. A message is gathered once: a belief that
/// failed to form after its batch committed is not tried again.
pub async fn gather(
    store: &Store,
    principal: &PrincipalId,
    former: &dyn MailFormer,
) -> Result<MailGathered, store::StoreError> {
    let mut total = MailGathered::default();
    loop {
        let batch = store.people().gather(principal, GATHER_BATCH, &read).await?;
        total.people.messages += batch.gathered.messages;
        total.people.created += batch.gathered.created;
        total.people.facts += batch.gathered.facts;
        let tally = form_sent(store, principal, batch.sent, former).await?;
        total.beliefs.created += tally.created;
        total.beliefs.known += tally.known;
        total.beliefs.forbidden += tally.forbidden;
        if batch.gathered.messages < GATHER_BATCH as usize {
            return Ok(total);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn heard(body: &str) -> Vec<Learned> {
        read(Heard {
            sender: "ada@example.org",
            subject: "",
            body,
        })
    }

    #[test]
    fn the_reader_takes_numbers_and_facts_from_the_senders_own_words_only() {
        let learned = heard(
            "Hello!\nI work at the observatory. My sister is Grace.\nDo I like tea?\n\
             --\nAda\nMobile: +44 (20) 7946-0958\nTel. 020 7946 0000\n\
             On Tue, 3 Nov 2026, Owner wrote:\n> I live in Paris\nI live in Rome",
        );
        let facts: Vec<&str> = learned
            .iter()
            .filter_map(|learned| match learned {
                Learned::Fact(statement) => Some(statement.as_str()),
                Learned::Phone(_) => None,
            })
            .collect();
        assert_eq!(
            facts,
            ["Works at the observatory"],
            "no relationship, question or quotation"
        );
        let phones: Vec<&str> = learned
            .iter()
            .filter_map(|learned| match learned {
                Learned::Phone(number) => Some(number.as_str()),
                Learned::Fact(_) => None,
            })
            .collect();
        assert_eq!(phones, ["+442079460958", "02079460000"]);
        assert!(
            heard("> I work at the mill\nthanks").is_empty(),
            "a quoted line is not theirs"
        );
        assert!(heard("Phone: call me").is_empty(), "a label without a number");
        assert!(
            heard("Cellar door 1234567").is_empty(),
            "a word that starts like a label"
        );
    }

    #[test]
    fn one_message_yields_at_most_a_few_facts() {
        let learned = heard("I work at A. I live in B. I prefer C. I usually D. I promised to E.");
        assert_eq!(learned.len(), MAX_FACTS);
    }
}

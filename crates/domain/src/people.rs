//! People: the owner's correspondents as records (a name, how they relate to the owner, their
//! contacts) gathered from mail and kept by the owner: pinned, reviewed, merged with a duplicate
//! or told apart from it, repaired (an address split off or re-linked) and forgotten. Pure
//! rules: no I/O, no clock.

use crate::names::names;

names! {
    /// How a person is reached.
    ContactKind ("contact kind") {
        /// An email address (kept in lower case).
        Email => "email",
        /// A telephone number (kept as `+` and digits).
        Phone => "phone",
    }
}

names! {
    /// A named collection of people.
    PeopleCollection ("people collection") {
        /// The people the owner pinned.
        Pinned => "pinned",
        /// People gathered from mail the owner has not reviewed yet.
        NeedsReview => "needs_review",
    }
}

names! {
    /// Where a fact about a person came from.
    FactSource ("fact source") {
        /// A message they sent (read as untrusted content).
        Email => "email",
        /// A conversation with the agent.
        Conversation => "conversation",
        /// The owner's own word.
        Owner => "owner",
    }
}

/// The longest name, in characters.
pub const MAX_NAME_CHARS: usize = 200;
/// The longest relationship (`sister`, `accountant`), in characters.
pub const MAX_RELATIONSHIP_CHARS: usize = 100;

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PeopleError {
    #[error("a name is 1 to {MAX_NAME_CHARS} characters on one line")]
    Name,
    #[error("a relationship is 1 to {MAX_RELATIONSHIP_CHARS} characters on one line")]
    Relationship,
    #[error("an email address has one `@` with text on both sides and no spaces")]
    Email,
    #[error(
        "a telephone number has 7 to 15 digits, an optional leading `+`, and only spaces, dots, dashes or brackets between them"
    )]
    Phone,
}

fn one_line(text: &str, max: usize) -> Option<String> {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    (!text.is_empty() && text.chars().count() <= max && !text.chars().any(char::is_control)).then_some(text)
}

/// A person's name, trimmed with its inner spacing collapsed.
pub fn name(text: &str) -> Result<String, PeopleError> {
    one_line(text, MAX_NAME_CHARS).ok_or(PeopleError::Name)
}

/// How a person relates to the owner, trimmed with its inner spacing collapsed.
pub fn relationship(text: &str) -> Result<String, PeopleError> {
    one_line(text, MAX_RELATIONSHIP_CHARS).ok_or(PeopleError::Relationship)
}

/// A contact in its one stored form: an email address in lower case, a telephone number as an
/// optional `+` and its digits.
pub fn contact(kind: ContactKind, value: &str) -> Result<String, PeopleError> {
    let value = value.trim();
    match kind {
        ContactKind::Email => {
            let (local, domain) = value.split_once('@').ok_or(PeopleError::Email)?;
            let fine = |part: &str| {
                !part.is_empty() && !part.contains('@') && !part.chars().any(|c| c.is_whitespace() || c.is_control())
            };
            if !fine(local) || !fine(domain) || value.chars().count() > 254 {
                return Err(PeopleError::Email);
            }
            Ok(value.to_lowercase())
        }
        ContactKind::Phone => {
            let (plus, rest) = match value.strip_prefix('+') {
                Some(rest) => ("+", rest),
                None => ("", value),
            };
            if !rest.chars().all(|c| c.is_ascii_digit() || " .-()".contains(c)) {
                return Err(PeopleError::Phone);
            }
            let digits: String = rest.chars().filter(char::is_ascii_digit).collect();
            if !(7..=15).contains(&digits.len()) {
                return Err(PeopleError::Phone);
            }
            Ok(format!("{plus}{digits}"))
        }
    }
}

/// Local parts of addresses that send for a machine, not a person (`noreply@`,
/// `mailer-daemon@`): never gathered into a record.
const MACHINE_SENDERS: &[&str] = &[
    "noreply",
    "no-reply",
    "no_reply",
    "donotreply",
    "do-not-reply",
    "do_not_reply",
    "mailer-daemon",
    "postmaster",
    "bounce",
    "bounces",
    "notifications",
    "notification",
];

/// Whether an address (stored form) belongs to a machine rather than a person.
pub fn machine_sender(address: &str) -> bool {
    let local = address.split('@').next().unwrap_or_default();
    let local = local.split('+').next().unwrap_or_default();
    MACHINE_SENDERS.contains(&local)
}

/// The name a record gets from an address seen without one: its local part, dots and
/// underscores as spaces, each word capitalised (`ada.lovelace@…` is `Ada Lovelace`).
pub fn name_from_address(address: &str) -> String {
    let local = address.split('@').next().unwrap_or(address);
    let local = local.split('+').next().unwrap_or(local);
    let words: Vec<String> = local
        .split(['.', '_', '-'])
        .filter(|word| !word.is_empty())
        .map(|word| {
            let mut chars = word.chars();
            chars
                .next()
                .map(|first| first.to_uppercase().chain(chars).collect())
                .unwrap_or_default()
        })
        .collect();
    if words.is_empty() {
        address.to_owned()
    } else {
        words.join(" ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn contacts_have_one_stored_form_and_bad_ones_are_refused() {
        assert_eq!(
            contact(ContactKind::Email, " Ada@Example.ORG ").as_deref(),
            Ok("ada@example.org")
        );
        assert_eq!(
            contact(ContactKind::Phone, "+44 (20) 7946-0958").as_deref(),
            Ok("+442079460958")
        );
        assert_eq!(
            contact(ContactKind::Phone, "020 7946 0958").as_deref(),
            Ok("02079460958")
        );
        for bad in ["ada", "@example.org", "ada@", "a da@example.org", "a@b@c"] {
            assert_eq!(contact(ContactKind::Email, bad), Err(PeopleError::Email), "{bad}");
        }
        for bad in ["12345", "+1 555 CALL NOW", "1234567890123456", "++4420794609"] {
            assert_eq!(contact(ContactKind::Phone, bad), Err(PeopleError::Phone), "{bad}");
        }
    }

    #[test]
    fn names_are_one_line_and_machine_senders_are_known() {
        assert_eq!(name("  Ada   Lovelace ").as_deref(), Ok("Ada Lovelace"));
        assert_eq!(name(""), Err(PeopleError::Name));
        assert_eq!(name(&"x".repeat(201)), Err(PeopleError::Name));
        assert_eq!(relationship(" sister "), Ok("sister".to_owned()));
        assert!(machine_sender("noreply@shop.example"));
        assert!(machine_sender("no-reply+tag@shop.example"));
        assert!(!machine_sender("ada@example.org"));
        assert_eq!(name_from_address("ada.lovelace@example.org"), "Ada Lovelace");
        assert_eq!(name_from_address("grace_hopper+work@example.org"), "Grace Hopper");
    }
}

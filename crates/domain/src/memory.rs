//! Memory: the governed beliefs the agent forms about the owner and their life. Each is one
//! short statement of a kind, with where it came from; the owner reviews it (`Mark reviewed`),
//! rejects it (`Not true`, `Not relevant here`) or deletes it. A deleted statement leaves a
//! tombstone of its normalized form, and a statement equal or close to a tombstone is never
//! formed again. Pure rules: no I/O, no clock.

use std::collections::BTreeSet;

use crate::names::names;

names! {
    /// What a belief is about.
    MemoryKind ("memory kind") {
        /// A fact about the owner (`works at the observatory`).
        Fact => "fact",
        /// Something the owner likes, dislikes or wants done a certain way.
        Preference => "preference",
        /// Someone in the owner's life and how they are related.
        Relationship => "relationship",
        /// Something the owner or someone else promised to do.
        Commitment => "commitment",
        /// Something the owner does regularly.
        Routine => "routine",
    }
}

names! {
    /// Where a belief stands with the owner.
    MemoryStatus ("memory status") {
        /// Formed by the agent, not reviewed (recalled unless flagged for review).
        Active => "active",
        /// The owner marked it reviewed (recalled).
        Reviewed => "reviewed",
        /// The owner said it is not true: never recalled, and not formed again (the statement
        /// stays, so a close statement meets it).
        NotTrue => "not_true",
    }
}

names! {
    /// What a belief was formed from.
    MemoryOrigin ("memory origin") {
        /// A conversation's finished run.
        Conversation => "conversation",
        /// Assessed mail: always flagged for review.
        Email => "email",
    }
}

impl MemoryOrigin {
    /// Whether a belief formed from this origin arrives flagged for review: every email-derived
    /// one does.
    pub const fn needs_review(self) -> bool {
        matches!(self, MemoryOrigin::Email)
    }
}

impl MemoryStatus {
    /// Whether a belief in this state may be recalled into a run's prompt (a flagged one is
    /// recalled only once reviewed).
    pub const fn recallable(self, needs_review: bool) -> bool {
        match self {
            MemoryStatus::Reviewed => true,
            MemoryStatus::Active => !needs_review,
            MemoryStatus::NotTrue => false,
        }
    }
}

/// The longest statement, in characters.
pub const MAX_STATEMENT_CHARS: usize = 300;

/// A belief's statement: trimmed, 1 to [`MAX_STATEMENT_CHARS`] characters, one line, no
/// control characters.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Statement(String);

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum StatementError {
    #[error("a statement is not empty")]
    Empty,
    #[error("a statement is at most {MAX_STATEMENT_CHARS} characters")]
    TooLong,
    #[error("a statement is one line without control characters")]
    Control,
    #[error("a statement says something in words")]
    NoWords,
}

impl Statement {
    pub fn new(text: &str) -> Result<Statement, StatementError> {
        let text = text.trim();
        if text.is_empty() {
            return Err(StatementError::Empty);
        }
        if text.chars().count() > MAX_STATEMENT_CHARS {
            return Err(StatementError::TooLong);
        }
        if text.chars().any(char::is_control) {
            return Err(StatementError::Control);
        }
        if normalize(text).is_empty() {
            return Err(StatementError::NoWords);
        }
        Ok(Statement(text.to_owned()))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Its normalized form (see [`normalize`]).
    pub fn normalized(&self) -> String {
        normalize(&self.0)
    }
}

/// Words that carry no belief of their own: dropped before statements are compared.
const FILLER: &[&str] = &[
    "a", "an", "the", "is", "are", "was", "were", "be", "been", "am", "to", "of", "and", "that", "this", "these",
    "those", "really", "very", "quite", "just", "also", "still", "always", "usually", "owner", "owners", "user",
    "users", "they", "their", "he", "she", "his", "her", "i", "me", "my", "we", "our", "you", "your", "s", "it", "its",
    "does", "do", "did", "has", "have", "had",
];

/// The form statements are compared in: lower case, letters and digits only, filler words
/// dropped, a plural or third-person `s` taken off longer words, one space between words. Two
/// statements that differ only in case, punctuation, spacing, articles or such endings have the
/// same form (`The owner prefers tea.` and `owner prefer TEA` are `prefer tea`).
pub fn normalize(statement: &str) -> String {
    words(statement).collect::<Vec<_>>().join(" ")
}

fn words(statement: &str) -> impl Iterator<Item = String> + '_ {
    statement
        .split(|c: char| !c.is_alphanumeric())
        .filter(|word| !word.is_empty())
        .map(str::to_lowercase)
        .filter(|word| !FILLER.contains(&word.as_str()))
        .map(|word| {
            if word.chars().count() > 3 && word.ends_with('s') && !word.ends_with("ss") {
                word[..word.len() - 1].to_owned()
            } else {
                word
            }
        })
}

/// How much two normalized forms must share to count as the same statement: the share of
/// their words in common (of all their words) at least this.
pub const CLOSE_ENOUGH: f64 = 0.75;

/// Whether two normalized forms say the same thing near enough that one deleted forbids the
/// other: sharing at least [`CLOSE_ENOUGH`] of their words (equal ones share all) (`prefer green tea` and
/// `prefer green tea morning` do; `prefer tea` and `prefer coffee` do not).
pub fn close(a: &str, b: &str) -> bool {
    let a: BTreeSet<&str> = a.split(' ').filter(|word| !word.is_empty()).collect();
    let b: BTreeSet<&str> = b.split(' ').filter(|word| !word.is_empty()).collect();
    if a.is_empty() || b.is_empty() {
        return false;
    }
    let shared = a.intersection(&b).count() as f64;
    let all = a.union(&b).count() as f64;
    shared / all >= CLOSE_ENOUGH
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trivially_reworded_statements_have_one_normalized_form() {
        let forms: Vec<String> = [
            "The owner prefers tea.",
            "owner prefer TEA",
            "  The owner's preferring? no: prefers   tea!! ",
        ]
        .iter()
        .map(|text| normalize(text))
        .collect();
        assert_eq!(forms[0], "prefer tea");
        assert_eq!(forms[1], "prefer tea");
        // Another word is another statement's form, not this one's.
        assert_ne!(forms[2], "prefer tea");
        assert_eq!(normalize("Ada Lovelace is the owner's sister"), "ada lovelace sister");
        assert_eq!(normalize("Meets Ada every Tuesday at 9"), "meet ada every tuesday at 9");
        assert_eq!(normalize("Class of glass"), "class glass", "a double s stays");
    }

    #[test]
    fn close_statements_share_most_of_their_words_and_others_do_not() {
        let form = |text: &str| normalize(text);
        assert!(close(&form("The owner prefers tea"), &form("Owner prefers tea.")));
        assert!(close(
            &form("Prefers green tea in the morning"),
            &form("The owner prefers green tea, in the morning!")
        ));
        assert!(close(
            &form("Ada Lovelace is the owner's sister"),
            &form("Ada Lovelace: sister")
        ));
        assert!(!close(&form("Prefers tea"), &form("Prefers coffee")));
        assert!(!close(
            &form("Ada is the owner's sister"),
            &form("Ada is the owner's manager")
        ));
        assert!(!close("", ""), "nothing is close to nothing");
    }

    #[test]
    fn a_statement_is_one_short_line_of_words() {
        assert_eq!(Statement::new("  Prefers tea  ").expect("ok").as_str(), "Prefers tea");
        assert_eq!(Statement::new("   "), Err(StatementError::Empty));
        assert_eq!(Statement::new("?!"), Err(StatementError::NoWords));
        assert_eq!(Statement::new("the a an"), Err(StatementError::NoWords));
        assert_eq!(Statement::new("two\nlines"), Err(StatementError::Control));
        assert_eq!(
            Statement::new(&"word ".repeat(61)),
            Err(StatementError::TooLong),
            "305 characters"
        );
        assert_eq!(Statement::new("Prefers tea").expect("ok").normalized(), "prefer tea");
    }

    #[test]
    fn only_unrejected_beliefs_are_recalled_and_flagged_ones_once_reviewed() {
        assert!(MemoryStatus::Active.recallable(false));
        assert!(!MemoryStatus::Active.recallable(true));
        assert!(MemoryStatus::Reviewed.recallable(true));
        assert!(!MemoryStatus::NotTrue.recallable(false));
        assert!(MemoryOrigin::Email.needs_review());
        assert!(!MemoryOrigin::Conversation.needs_review());
    }
}

//! The offline former: a small, documented set of first-person sentence patterns, so that
//! development and tests form beliefs without a model. It reads only what the owner wrote (their
//! messages in a conversation, the mail they sent); each sentence (split at `.`, `!`, `?`, `;` and line
//! ends) that starts with one of these patterns, in any case, forms one belief of the rest `X`:
//!
//! | The owner writes | Kind | Statement |
//! |---|---|---|
//! | `I prefer X` | preference | `Prefers X` |
//! | `I like X`, `I love X` | preference | `Likes X` |
//! | `I don't like X`, `I do not like X`, `I dislike X`, `I hate X` | preference | `Dislikes X` |
//! | `I work at X`, `I work for X` | fact | `Works at X` |
//! | `I live in X` | fact | `Lives in X` |
//! | `My birthday is X` | fact | `Birthday is X` |
//! | `My R is X`, with R one of [`RELATIONS`] | relationship | `X is the owner's R` |
//! | `I promised to X` | commitment | `Promised to X` |
//! | `Every D I X`, `Every D, I X` (D one word: `monday`, `morning`, `day`…) | routine | `Every D: X` |
//! | `I usually X` | routine | `Usually X` |
//!
//! `X` is at most [`MAX_REST_CHARS`] characters and a statement of words; a sentence that is a
//! question forms nothing. At most [`MAX_PROPOSALS`] beliefs come from one text.

use domain::memory::{MemoryKind, Statement};

/// The relations `My R is X` names.
pub const RELATIONS: &[&str] = &[
    "wife",
    "husband",
    "partner",
    "sister",
    "brother",
    "mother",
    "father",
    "daughter",
    "son",
    "friend",
    "manager",
    "boss",
    "colleague",
    "assistant",
    "doctor",
    "accountant",
];

/// The longest rest of a sentence a belief is formed of.
pub const MAX_REST_CHARS: usize = 120;
/// The most beliefs one text forms.
pub const MAX_PROPOSALS: usize = 12;

/// A belief a former proposes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Proposal {
    pub kind: MemoryKind,
    pub statement: Statement,
}

/// The beliefs the owner's own `text` states, by the patterns above.
pub fn propose(text: &str) -> Vec<Proposal> {
    let mut proposals: Vec<Proposal> = Vec::new();
    let mut rest = text;
    while !rest.is_empty() && proposals.len() < MAX_PROPOSALS {
        let end = rest.find(['.', '!', '?', ';', '\n', '\r']).unwrap_or(rest.len());
        let question = rest[end..].starts_with('?');
        let sentence = &rest[..end];
        rest = rest.get(end + 1..).unwrap_or("");
        if question {
            continue;
        }
        if let Some(proposal) = sentence_belief(sentence.trim())
            && !proposals.iter().any(|seen| seen.statement == proposal.statement)
        {
            proposals.push(proposal);
        }
    }
    proposals
}

/// The rest of `sentence` after `prefix` (matched in any ASCII case), trimmed.
fn after<'a>(sentence: &'a str, prefix: &str) -> Option<&'a str> {
    let head = sentence.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| sentence[prefix.len()..].trim())
}

fn sentence_belief(sentence: &str) -> Option<Proposal> {
    let sentence = sentence.replace('\u{2019}', "'");
    let sentence = sentence.trim_matches(|c: char| c.is_whitespace() || c == ',' || c == ';' || c == ':');
    let simple: [(&str, MemoryKind, &str); 12] = [
        ("i don't like ", MemoryKind::Preference, "Dislikes"),
        ("i do not like ", MemoryKind::Preference, "Dislikes"),
        ("i dislike ", MemoryKind::Preference, "Dislikes"),
        ("i hate ", MemoryKind::Preference, "Dislikes"),
        ("i prefer ", MemoryKind::Preference, "Prefers"),
        ("i like ", MemoryKind::Preference, "Likes"),
        ("i love ", MemoryKind::Preference, "Likes"),
        ("i work at ", MemoryKind::Fact, "Works at"),
        ("i work for ", MemoryKind::Fact, "Works at"),
        ("i live in ", MemoryKind::Fact, "Lives in"),
        ("my birthday is ", MemoryKind::Fact, "Birthday is"),
        ("i promised to ", MemoryKind::Commitment, "Promised to"),
    ];
    for (prefix, kind, said) in simple {
        if let Some(rest) = after(sentence, prefix) {
            return proposal(kind, said, rest);
        }
    }
    if let Some(rest) = after(sentence, "i usually ") {
        return proposal(MemoryKind::Routine, "Usually", rest);
    }
    if let Some(rest) = after(sentence, "my ") {
        let (relation, named) = rest.split_once(" is ")?;
        let relation = relation.trim().to_ascii_lowercase();
        if !RELATIONS.contains(&relation.as_str()) {
            return None;
        }
        let named = usable(named)?;
        return Statement::new(&format!("{named} is the owner's {relation}"))
            .ok()
            .map(|statement| Proposal {
                kind: MemoryKind::Relationship,
                statement,
            });
    }
    if let Some(rest) = after(sentence, "every ") {
        let (when, done) = rest.split_once(' ')?;
        let when = when.trim_end_matches(',').to_ascii_lowercase();
        let done = after(done.trim_start_matches(',').trim(), "i ")?;
        if when.is_empty() || !when.chars().all(|c| c.is_ascii_alphabetic()) {
            return None;
        }
        return proposal(MemoryKind::Routine, &format!("Every {when}:"), done);
    }
    None
}

/// `rest` if a belief may be formed of it: not empty, not too long.
fn usable(rest: &str) -> Option<&str> {
    let rest = rest.trim();
    (!rest.is_empty() && rest.chars().count() <= MAX_REST_CHARS).then_some(rest)
}

fn proposal(kind: MemoryKind, said: &str, rest: &str) -> Option<Proposal> {
    let rest = usable(rest)?;
    Statement::new(&format!("{said} {rest}"))
        .ok()
        .map(|statement| Proposal { kind, statement })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn said(text: &str) -> Vec<(MemoryKind, String)> {
        propose(text)
            .into_iter()
            .map(|proposal| (proposal.kind, proposal.statement.as_str().to_owned()))
            .collect()
    }

    #[test]
    fn each_pattern_forms_its_belief() {
        assert_eq!(
            said(
                "I prefer green tea in the morning. i love long walks! I don\u{2019}t like phone calls.\n\
                 I work at the Observatory; I live in Lyon. My birthday is 3 March. My sister is Ada Lovelace. \
                 I promised to send Bob the slides. Every Monday I swim. Every morning, I read the news. \
                 I usually cycle to work."
            ),
            vec![
                (MemoryKind::Preference, "Prefers green tea in the morning".to_owned()),
                (MemoryKind::Preference, "Likes long walks".to_owned()),
                (MemoryKind::Preference, "Dislikes phone calls".to_owned()),
                (MemoryKind::Fact, "Works at the Observatory".to_owned()),
                (MemoryKind::Fact, "Lives in Lyon".to_owned()),
                (MemoryKind::Fact, "Birthday is 3 March".to_owned()),
                (
                    MemoryKind::Relationship,
                    "Ada Lovelace is the owner's sister".to_owned()
                ),
                (MemoryKind::Commitment, "Promised to send Bob the slides".to_owned()),
                (MemoryKind::Routine, "Every monday: swim".to_owned()),
                (MemoryKind::Routine, "Every morning: read the news".to_owned()),
                (MemoryKind::Routine, "Usually cycle to work".to_owned()),
            ]
        );
    }

    #[test]
    fn questions_other_sentences_and_unknown_relations_form_nothing() {
        assert!(said("Do I like tea? I like tea?").is_empty());
        assert!(said("What is the weather in Lyon. Book a table for two.").is_empty());
        assert!(said("My car is red. My is weird. Every  I swim.").is_empty());
        assert!(said(&format!("I like {}", "x".repeat(121))).is_empty(), "too long");
        assert!(said("I like  .").is_empty(), "nothing liked");
    }

    #[test]
    fn one_text_forms_each_belief_once_and_at_most_twelve() {
        assert_eq!(said("I like tea. I like tea!").len(), 1);
        let many: String = (0..15).map(|n| format!("I like thing {n}. ")).collect();
        assert_eq!(said(&many).len(), MAX_PROPOSALS);
    }
}

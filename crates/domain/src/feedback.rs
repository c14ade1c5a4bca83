//! Email mode's feedback vocabulary: what the owner says about an assessment (a signal), what
//! it applies to (a scope), and the kinds of content a rule can name. Feedback is a rule, not
//! prompt text: a conversation's own rule wins over a person's, which wins over a kind's, and
//! the newest wins within one scope; importance and reply need are decided separately.

use crate::names::names;

names! {
    /// What kind of content a message is.
    ContentKind ("content kind") {
        /// Mailing lists and newsletters (bulk headers).
        Bulk => "bulk",
        /// Receipts, notifications and other machine-sent mail.
        Transactional => "transactional",
        /// Mail from people.
        Personal => "personal",
    }
}

names! {
    /// What a piece of feedback applies to.
    FeedbackScope ("feedback scope") {
        /// The conversation it was given on.
        Thread => "thread",
        /// Every conversation from one person (an address the owner chose explicitly).
        Person => "person",
        /// Every conversation of one kind of content.
        Kind => "kind",
    }
}

names! {
    /// What the owner says.
    FeedbackSignal ("feedback signal") {
        Important => "important",
        LessImportant => "less_important",
        NeedsReply => "needs_reply",
        NoReply => "no_reply",
    }
}

impl FeedbackSignal {
    /// Whether it decides importance (otherwise reply need).
    pub const fn is_importance(self) -> bool {
        matches!(self, FeedbackSignal::Important | FeedbackSignal::LessImportant)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_signals_split_into_importance_and_reply_need() {
        for kind in ContentKind::ALL {
            assert_eq!(ContentKind::parse(kind.as_str()), Some(*kind));
            assert_eq!(serde_json::to_value(kind).expect("json"), kind.as_str());
        }
        assert_eq!(FeedbackScope::parse("person"), Some(FeedbackScope::Person));
        assert_eq!(FeedbackScope::parse("everyone"), None);
        let importance: Vec<bool> = FeedbackSignal::ALL.iter().map(|s| s.is_importance()).collect();
        assert_eq!(importance, [true, true, false, false]);
    }
}

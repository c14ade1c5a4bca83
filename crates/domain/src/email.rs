//! Email mode's closed sets of names, defined once: the store keeps them as text (each column's
//! `CHECK` lists the same names), the wire sends them as these snake_case strings, and the
//! classifier, the API and the worker use the enums. An unknown stored name is corruption.

use crate::names::names;

names! {
    /// What the classifier says of a conversation's importance.
    Importance ("importance") {
        Important => "important",
        Other => "other",
    }
}

names! {
    /// Whether a conversation waits for the owner (none when it does not).
    ReplyNeed ("reply need") {
        /// `Needs reply`.
        NeedsReply => "needs_reply",
        /// `For your attention`.
        ForYourAttention => "for_your_attention",
    }
}

names! {
    /// Which listing of the inbox.
    #[derive(Default)]
    InboxView ("inbox view") {
        /// The priority inbox: in the Inbox and assessed important; needs a reply first, then
        /// for your attention, then the rest, newest first.
        #[default]
        Important => "important",
        /// Everything else (unassessed, other, archived, spam), newest first.
        Other => "other",
    }
}

names! {
    /// Why an account's new mail waits unassessed.
    AllowanceWait ("allowance wait") {
        /// The email cost allowance of this UTC day is spent.
        DailyAllowanceSpent => "daily_allowance_spent",
        /// The email cost allowance of the rolling 30 days is spent.
        MonthlyAllowanceSpent => "monthly_allowance_spent",
    }
}

names! {
    /// A durable mailbox operation's kind.
    EmailOperationKind ("email operation kind") {
        Refresh => "refresh",
        Archive => "archive",
        MoveToInbox => "move_to_inbox",
        ReportSpam => "report_spam",
        NotSpam => "not_spam",
        /// The agent proposing a reply, which lands as a revision of `draft_id`.
        ProposeReply => "propose_reply",
        /// An unsubscribe command: one request per confirmed sender (`targets`).
        Unsubscribe => "unsubscribe",
    }
}

names! {
    /// An operation's state: it settles to `succeeded`, `failed` or `uncertain`. An uncertain
    /// write is never repeated; reading the conversation settles it later (`reconciled_at`).
    EmailOperationState ("email operation state") {
        Queued => "queued",
        Dispatching => "dispatching",
        Succeeded => "succeeded",
        Failed => "failed",
        Uncertain => "uncertain",
    }
}

names! {
    /// A provider write the owner can ask for: the operation kinds that change a conversation's
    /// labels.
    MailboxWrite ("mailbox write") {
        /// Inbox off (the thread is handled).
        Archive => "archive",
        /// Back to the originating account's Inbox.
        MoveToInbox => "move_to_inbox",
        /// Spam on, Inbox off.
        ReportSpam => "report_spam",
        /// Spam off, Inbox on.
        NotSpam => "not_spam",
    }
}

impl MailboxWrite {
    /// The write an operation of `kind` is; `None` for a refresh, a proposed reply or an
    /// unsubscribe.
    pub const fn of(kind: EmailOperationKind) -> Option<MailboxWrite> {
        match kind {
            EmailOperationKind::Archive => Some(MailboxWrite::Archive),
            EmailOperationKind::MoveToInbox => Some(MailboxWrite::MoveToInbox),
            EmailOperationKind::ReportSpam => Some(MailboxWrite::ReportSpam),
            EmailOperationKind::NotSpam => Some(MailboxWrite::NotSpam),
            EmailOperationKind::Refresh | EmailOperationKind::ProposeReply | EmailOperationKind::Unsubscribe => None,
        }
    }
}

names! {
    /// Who wrote a draft's revision.
    DraftAuthor ("draft author") {
        Owner => "owner",
        /// The agent's proposal, which the owner edits.
        Agent => "agent",
    }
}

names! {
    /// Where a conversation's newest draft is, as its inbox row shows it.
    DraftStanding ("draft standing") {
        /// Being written, or waiting to be sent.
        Draft => "draft",
        /// A send with an unknown outcome: the mailbox is being checked.
        CheckSendStatus => "check_send_status",
        /// Sent.
        Sent => "sent",
    }
}

names! {
    /// A learning exclusion's kind: a sender's address, or a provider label id.
    ExclusionKind ("learning exclusion kind") {
        Sender => "sender",
        Label => "label",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_mailbox_write_is_an_operation_kind_of_the_same_name() {
        for write in MailboxWrite::ALL {
            let kind = EmailOperationKind::parse(write.as_str()).expect("an operation kind of the same name");
            assert_eq!(MailboxWrite::of(kind), Some(*write));
        }
        assert_eq!(MailboxWrite::of(EmailOperationKind::Refresh), None);
        assert_eq!(InboxView::default(), InboxView::Important);
        assert_eq!(
            EmailOperationState::try_from("settled").map_err(|refused| refused.to_string()),
            Err("`settled` is not a known email operation state".to_owned())
        );
    }
}

names! {
    /// What an unsubscribe sends: an RFC 8058 one-click request, or one message.
    UnsubscribeMechanism ("unsubscribe mechanism") {
        /// `One-click request to <host>`.
        OneClick => "one_click",
        /// `Sends an email to <address>`.
        Mailto => "mailto",
    }
}

names! {
    /// How far a subscription's evidence (its newest message's DKIM signature) has been checked.
    EvidenceCheck ("evidence check") {
        /// Not checked yet, or a key could not be looked up: checked again on a later refresh.
        Pending => "pending",
        /// A signature verifies that covers the unsubscribe headers.
        Verified => "verified",
        /// No such signature: checked again only when newer mail from the sender arrives.
        Failed => "failed",
    }
}

names! {
    /// What the owner decided about a sender, and what came of it. Undecided senders are
    /// `unverified` or `eligible` by their evidence ([`SubscriptionState`]).
    SubscriptionDecision ("subscription decision") {
        /// Keep receiving (reversible): never suggested again.
        Kept => "kept",
        /// An unsubscribe was confirmed and is under way.
        Unsubscribing => "unsubscribing",
        Unsubscribed => "unsubscribed",
        /// Unsubscribed, yet mail kept arriving ten days and more later.
        StillSending => "still_sending",
        /// The sender's mail was reported as spam.
        ReportedSpam => "reported_spam",
    }
}

names! {
    /// A census row's state as clients see it: the owner's decision, or else whether its
    /// evidence is verified.
    SubscriptionState ("subscription state") {
        /// `Checking…`: the evidence is not verified; nothing can be sent.
        Unverified => "unverified",
        Eligible => "eligible",
        Kept => "kept",
        Unsubscribing => "unsubscribing",
        Unsubscribed => "unsubscribed",
        StillSending => "still_sending",
        ReportedSpam => "reported_spam",
    }
}

impl SubscriptionState {
    /// The state of a row with `decision` and evidence `check`.
    pub fn of(decision: Option<SubscriptionDecision>, check: EvidenceCheck) -> SubscriptionState {
        match decision {
            Some(SubscriptionDecision::Kept) => SubscriptionState::Kept,
            Some(SubscriptionDecision::Unsubscribing) => SubscriptionState::Unsubscribing,
            Some(SubscriptionDecision::Unsubscribed) => SubscriptionState::Unsubscribed,
            Some(SubscriptionDecision::StillSending) => SubscriptionState::StillSending,
            Some(SubscriptionDecision::ReportedSpam) => SubscriptionState::ReportedSpam,
            None if check == EvidenceCheck::Verified => SubscriptionState::Eligible,
            None => SubscriptionState::Unverified,
        }
    }
}

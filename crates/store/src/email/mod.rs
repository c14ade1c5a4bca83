//! Email mode's storage, behind one handle: `store.email()` reads and keeps the mailbox
//! projections (`projection`, `inbox`), the durable operations that refresh a mailbox or change
//! a conversation in it (`operations`), versioned drafts and their Review & Send (`drafts`,
//! `sends`), the agent's proposed replies (`proposals`), and the owner's feedback and learning
//! controls (`feedback`), and the subscription census (`subscriptions`). Every statement runs on the store's pool and clock.

mod drafts;
mod feedback;
mod inbox;
mod junk;
mod operations;
mod projection;
mod proposals;
mod sends;
mod subscriptions;
mod unsubscribe;

pub use drafts::{
    DraftContent, DraftPlace, DraftRevision, DraftRow, EndorseStyle, ReviewDraft, SaveDraft, StyleSampleRow,
};
pub use feedback::{ExclusionRow, FeedbackRow, GiveFeedback, LearningReset, LearningRow, NewFeedback};
pub use inbox::{InboxPosition, InboxQuery, ThreadSummary};
pub use junk::{Filtering, JunkFacts, JunkFiltered, JunkRequest, JunkStatus, NewJudgment, ReplayCandidate};
pub use operations::{
    ClaimedWrite, EmailOperationRow, NOT_APPLIED, Reconciliation, RefreshRequest, THREAD_GONE, WriteOutcome,
    WriteRequest,
};
pub use projection::{EmailAccountRow, EmailMessageRow, NewAssessment, NewEmailMessage, WaitingThread};
pub use proposals::{ClaimedProposal, Landing, RequestProposal};
pub use sends::{DraftSend, Freeze};
pub use subscriptions::{
    CensusCandidate, CensusEntry, OwnerChange, STILL_SENDING_AFTER, SubscriptionChange, SubscriptionQuery,
    SubscriptionRow,
};
pub use unsubscribe::{
    ClaimedUnsubscribe, ConfirmedTarget, INTERRUPTED, TargetOutcome, TargetRefused, UnsubscribeRequest,
    UnsubscribeTargetRow,
};

use crate::Store;

/// Email mode's part of the store (`store.email()`): a view of the same pool and clock.
#[derive(Clone, Copy, Debug)]
pub struct Email<'a> {
    store: &'a Store,
}

impl Store {
    /// Email mode's storage.
    pub fn email(&self) -> Email<'_> {
        Email { store: self }
    }
}

impl std::ops::Deref for Email<'_> {
    type Target = Store;

    /// Its statements run on the store's pool, clock and wake-ups.
    fn deref(&self) -> &Store {
        self.store
    }
}

//! Unsubscribe assistance (`/v1/email/subscriptions`, mounted with
//! `AGENT_EMAIL_UNSUBSCRIBE_ENABLED=1`): the subscription census, the one unsubscribe command,
//! and the owner's changes of a row (Keep and its undo, Report spam, Not spam).
//!
//! No projection carries an unsubscribe URI or a mailto URI: a row shows the one-click host or
//! the address a message would go to (`destination`), and a command names rows only.

pub use domain::email::{SubscriptionState, UnsubscribeMechanism};
use serde::{Deserialize, Serialize};
use utoipa::{IntoParams, ToSchema};
use uuid::Uuid;

use crate::email::EmailOperation;
pub use crate::email::{Subscription, UnsubscribeTargetStatus};
use crate::request::Invalid;

/// The most senders one unsubscribe command names.
pub const MAX_TARGETS: usize = 25;

/// `GET /v1/email/subscriptions` parameters.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, IntoParams)]
#[serde(deny_unknown_fields)]
#[into_params(parameter_in = Query)]
pub struct ListSubscriptions {
    /// Only this account's senders.
    #[param(min_length = 1, max_length = 64, pattern = "^[a-z0-9_-]+$")]
    pub account_id: Option<String>,
    /// Only rows in this state.
    pub state: Option<SubscriptionState>,
    /// The `next_cursor` of the previous page with the same filters; omit it for the first.
    pub cursor: Option<String>,
    /// Page size (default 50).
    #[param(minimum = 1, maximum = 100)]
    pub limit: Option<u32>,
}

/// `GET /v1/email/subscriptions`: rows in server order (newest arrival first).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct SubscriptionPage {
    pub subscriptions: Vec<Subscription>,
    pub next_cursor: Option<String>,
}

/// One sender of an unsubscribe command, as the owner confirmed it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct UnsubscribeTarget {
    pub subscription_id: Uuid,
    /// The row's `evidence_digest` when it was confirmed.
    #[schema(min_length = 64, max_length = 64, pattern = "^[0-9a-f]{64}$")]
    pub evidence_digest: String,
    /// The row's `revision` when it was confirmed.
    #[serde(deserialize_with = "crate::request::whole")]
    #[schema(minimum = 1)]
    pub expected_revision: i64,
}

/// `POST /v1/email/subscriptions/unsubscribe`: one confirmed command.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct Unsubscribe {
    /// One to 25 senders, each once, all of one account.
    #[schema(min_items = 1, max_items = 25)]
    pub targets: Vec<UnsubscribeTarget>,
    /// Also archive the senders' mail now in the Inbox, after each unsubscribe succeeds.
    #[serde(default)]
    pub also_archive: bool,
}

impl Unsubscribe {
    /// The targets, when there are 1 to 25 distinct ones with well-formed digests.
    pub fn checked(self) -> Result<(Vec<UnsubscribeTarget>, bool), Invalid> {
        if self.targets.is_empty() || self.targets.len() > MAX_TARGETS {
            return Err(Invalid::new("targets", format!("name 1 to {MAX_TARGETS} senders")));
        }
        let mut seen = std::collections::HashSet::new();
        for (index, target) in self.targets.iter().enumerate() {
            let digest = &target.evidence_digest;
            if digest.len() != 64 || !digest.bytes().all(|byte| matches!(byte, b'0'..=b'9' | b'a'..=b'f')) {
                return Err(Invalid::new(
                    &format!("targets.{index}.evidence_digest"),
                    "64 lowercase hexadecimal digits",
                ));
            }
            if target.expected_revision < 1 {
                return Err(Invalid::new(
                    &format!("targets.{index}.expected_revision"),
                    "at least 1",
                ));
            }
            if !seen.insert(target.subscription_id) {
                return Err(Invalid::new(
                    &format!("targets.{index}.subscription_id"),
                    "each sender is named once",
                ));
            }
        }
        Ok((self.targets, self.also_archive))
    }
}

/// Why a target of a command was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(rename_all = "snake_case")]
pub enum TargetRefusal {
    /// No such sender.
    NotFound,
    /// The row changed since it was confirmed (its revision or evidence): reload and confirm
    /// again.
    Changed,
    /// The row cannot be unsubscribed as it is (decided, unverified, or offering nothing).
    NotEligible,
}

/// A refused target.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
pub struct RefusedTarget {
    pub subscription_id: Uuid,
    pub reason: TargetRefusal,
}

/// `POST /v1/email/subscriptions/unsubscribe` (202): the operation running the accepted
/// targets (poll `GET /v1/email/operations/{id}`), and the refused ones. When every target is
/// refused nothing runs and the answer is a 409 problem (`email_subscription_changed`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct UnsubscribeAnswer {
    pub operation: EmailOperation,
    pub refused: Vec<RefusedTarget>,
}

/// `POST /v1/email/subscriptions/{id}/keep`, `DELETE` of it (undo), `…/spam` and
/// `…/not-spam`: the revision the owner saw.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, ToSchema)]
#[serde(deny_unknown_fields)]
pub struct SubscriptionChange {
    #[serde(deserialize_with = "crate::request::whole")]
    #[schema(minimum = 1)]
    pub expected_revision: i64,
}

/// The row after a change, and the mailbox writes it queued (Report spam and Not spam: one
/// per conversation, each an operation to poll).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, ToSchema)]
pub struct SubscriptionChanged {
    pub subscription: Subscription,
    pub operations: Vec<EmailOperation>,
}

//! The subscription census, taken by the async worker at the end of each update of an account
//! while unsubscribe assistance is on (`AGENT_EMAIL_UNSUBSCRIBE_ENABLED`).
//!
//! One row per sender whose mail in the backfill window carries `List-Unsubscribe`. A row's
//! evidence is the sender's newest such message: when it is new (or its check could not finish
//! before), the message is read again with the read document and its DKIM signature examined
//! ([`crate::evidence`]); at most [`CHECKS_PER_UPDATE`] per update, newest senders first, so a
//! mailbox of many newsletters fills over a few updates. The owner's decisions are never
//! changed here, except that an unsubscribed sender still mailing ten days later becomes
//! `still_sending` (nothing is sent).

use std::collections::HashMap;

use domain::email::EvidenceCheck;
use mail_mcp::accounts::ReadAccount;
use sha2::{Digest, Sha256};
use store::{CensusCandidate, CensusEntry, SubscriptionRow};

use crate::evidence::{Dkim, Examined, Mechanism, Verdict};
use crate::provider::MessageRef;
use crate::refresh::{RefreshError, Refresher};

/// Evidence checks (a message read and its signature verified) per account update.
pub const CHECKS_PER_UPDATE: usize = 50;

/// What one census did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CensusTaken {
    /// Senders of bulk mail in the window.
    pub senders: usize,
    /// Evidence checks made.
    pub checked: usize,
    /// Unsubscribed senders found still sending.
    pub still_sending: u64,
}

/// The evidence digest: what a confirmation was made against. It changes when the mechanism,
/// its target, the evidence message or the check's outcome does.
pub fn digest(sender: &str, evidence_message: &str, check: EvidenceCheck, mechanism: Option<&Mechanism>) -> String {
    let mut hash = Sha256::new();
    for part in [
        "steward-unsubscribe-evidence-v1",
        sender,
        evidence_message,
        check.as_str(),
        mechanism.map_or("", |mechanism| mechanism.kind().as_str()),
        mechanism.map_or("", Mechanism::target),
    ] {
        hash.update(part.as_bytes());
        hash.update([0]);
    }
    hash.finalize().iter().map(|byte| format!("{byte:02x}")).collect()
}

impl Refresher {
    /// Takes `account`'s census (see the module).
    pub async fn take_census(&self, account: &ReadAccount, dkim: &Dkim) -> Result<CensusTaken, RefreshError> {
        let email = self.store.email();
        let since = self.store.now() - self.backfill;
        let mut candidates = email.census_candidates(&account.account_id, since).await?;
        // Newest senders are checked first when the checks of one update run out.
        candidates.sort_by_key(|candidate| std::cmp::Reverse(candidate.last_arrival_at));
        let known: HashMap<String, SubscriptionRow> = email
            .subscriptions_of(&account.account_id)
            .await?
            .into_iter()
            .map(|row| (row.sender.clone(), row))
            .collect();
        let mut taken = CensusTaken {
            senders: candidates.len(),
            ..CensusTaken::default()
        };
        for candidate in &candidates {
            let row = known.get(&candidate.sender);
            let current = row.filter(|row| {
                row.evidence_message == candidate.newest_message && row.evidence_check != EvidenceCheck::Pending
            });
            match current {
                Some(row) => {
                    let mechanism = row
                        .mechanism
                        .zip(row.target.as_deref())
                        .zip(row.destination.as_deref())
                        .map(|((mechanism, target), destination)| (mechanism, target, destination));
                    let entry = CensusEntry {
                        candidate,
                        evidence_message: &row.evidence_message,
                        check: row.evidence_check,
                        mechanism,
                        digest: &row.digest,
                    };
                    email.record_census(&account.account_id, &entry).await?;
                }
                None if taken.checked < CHECKS_PER_UPDATE => {
                    taken.checked += 1;
                    let examined = self.examine(account, candidate, dkim).await?;
                    self.record_examined(account, candidate, &examined).await?;
                }
                // Out of checks: a new sender waits, pending, for a later update; a known
                // one keeps its evidence until then.
                None => {
                    let pending = Examined {
                        verdict: Verdict::Unavailable,
                        mechanism: None,
                    };
                    if row.is_none() {
                        self.record_examined(account, candidate, &pending).await?;
                    }
                }
            }
        }
        let present: Vec<String> = candidates.iter().map(|candidate| candidate.sender.clone()).collect();
        email.census_absent(&account.account_id, &present).await?;
        taken.still_sending = email.mark_still_sending(&account.account_id).await?;
        Ok(taken)
    }

    /// The evidence of `candidate`'s newest message, read again from the provider.
    async fn examine(
        &self,
        account: &ReadAccount,
        candidate: &CensusCandidate,
        dkim: &Dkim,
    ) -> Result<Examined, RefreshError> {
        let reference = MessageRef {
            id: candidate.newest_message.clone(),
            thread_id: String::new(),
        };
        Ok(match self.read(account, &reference).await? {
            Some(raw) => dkim.examine(&raw.bytes).await,
            // Gone from the provider: nothing to act on.
            None => Examined {
                verdict: Verdict::Failed,
                mechanism: None,
            },
        })
    }

    async fn record_examined(
        &self,
        account: &ReadAccount,
        candidate: &CensusCandidate,
        examined: &Examined,
    ) -> Result<(), RefreshError> {
        let check = match examined.verdict {
            Verdict::Verified => EvidenceCheck::Verified,
            Verdict::Failed => EvidenceCheck::Failed,
            Verdict::Unavailable => EvidenceCheck::Pending,
        };
        let mechanism = examined.mechanism.as_ref();
        let digest = digest(&candidate.sender, &candidate.newest_message, check, mechanism);
        let entry = CensusEntry {
            candidate,
            evidence_message: &candidate.newest_message,
            check,
            mechanism: mechanism.map(|mechanism| (mechanism.kind(), mechanism.target(), mechanism.destination())),
            digest: &digest,
        };
        self.store.email().record_census(&account.account_id, &entry).await?;
        Ok(())
    }
}

//! Email mode's provider writes (archive, move back to the Inbox, report spam, Not spam), run by
//! the worker role with each account's write document as durable operations.
//!
//! Each write is claimed, marked `dispatching` (committed) before its one `threads.modify`
//! request leaves, and settled from the answer. An answer that proves nothing (a timeout, a cut
//! connection, a 5xx), or a dispatch left by a worker that died, is `uncertain`: it is settled
//! only by reading the thread's labels with the read document, and never sent again.

use std::sync::Arc;
use std::time::Duration;

use domain::email::MailboxWrite;
use mail_mcp::accounts::Account;
use mail_mcp::gmail::{Credential, GmailClient, MailError};
use serde_json::{Value, json};
use store::{ClaimedWrite, Reconciliation, Store, StoreError, WriteOutcome};
use tracing::Instrument;

/// How the writer is paced.
#[derive(Clone, Debug)]
pub struct WritePace {
    /// How often queued and uncertain writes are looked for.
    pub poll: Duration,
    /// How long a claim is this worker's; a dispatch still unsettled after it is uncertain.
    pub lease: Duration,
}

impl Default for WritePace {
    fn default() -> Self {
        WritePace {
            poll: Duration::from_millis(500),
            lease: Duration::from_secs(120),
        }
    }
}

/// Runs the writes of the accounts it holds.
#[derive(Debug)]
pub struct Writer {
    pub store: Store,
    pub gmail: Arc<GmailClient>,
    pub accounts: Vec<Account>,
    pub worker_id: String,
    pub pace: WritePace,
}

/// The labels a write adds and removes.
fn change(kind: MailboxWrite) -> (&'static [&'static str], &'static [&'static str]) {
    match kind {
        MailboxWrite::Archive => (&[], &["INBOX"]),
        MailboxWrite::MoveToInbox => (&["INBOX"], &[]),
        MailboxWrite::ReportSpam => (&["SPAM"], &["INBOX"]),
        MailboxWrite::NotSpam => (&["INBOX"], &["SPAM"]),
    }
}

/// Each message's labels in a thread resource (`threads.modify`'s and `threads.get`'s answer).
fn message_labels(thread: &Value) -> Vec<(String, Vec<String>)> {
    thread["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|message| {
            let id = message["id"].as_str()?.to_owned();
            let labels = message["labelIds"]
                .as_array()
                .into_iter()
                .flatten()
                .filter_map(|label| label.as_str().map(str::to_owned))
                .collect();
            Some((id, labels))
        })
        .collect()
}

/// Whether the labels show `kind` applied to the thread: every label it adds is on some
/// message, and no message keeps a label it removes.
fn shows_applied(kind: MailboxWrite, labels: &[(String, Vec<String>)]) -> bool {
    let (add, remove) = change(kind);
    let has = |label: &str| labels.iter().any(|(_, labels)| labels.iter().any(|l| l == label));
    add.iter().all(|label| has(label)) && !remove.iter().any(|label| has(label))
}

impl Writer {
    /// Runs until `shutdown` resolves (between writes).
    pub async fn run(self, shutdown: impl std::future::Future<Output = ()>) {
        tokio::pin!(shutdown);
        loop {
            if let Err(error) = self.pass().await {
                tracing::warn!(%error, "email writes pass failed");
            }
            tokio::select! {
                () = tokio::time::sleep(self.pace.poll) => {}
                () = &mut shutdown => return,
            }
        }
    }

    /// One pass: strands dispatches whose claims expired, runs every queued write, then reads
    /// the thread of every uncertain one.
    pub async fn pass(&self) -> Result<(), StoreError> {
        let stranded = self.store.email().strand_dispatches().await?;
        if stranded > 0 {
            tracing::warn!(
                stranded,
                "email writes left dispatching by a stopped worker are uncertain"
            );
        }
        // A span per operation (`mailbox_write{operation_id kind}`), as for a run's calls.
        let span = |claimed: &ClaimedWrite| tracing::info_span!("mailbox_write", operation_id = %claimed.operation.id, kind = claimed.kind.as_str());
        while let Some(claimed) = self.store.email().claim_write(&self.worker_id, self.pace.lease).await? {
            self.dispatch(&claimed).instrument(span(&claimed)).await?;
        }
        while let Some(claimed) = self
            .store
            .email()
            .claim_uncertain(&self.worker_id, self.pace.lease)
            .await?
        {
            self.reconcile(&claimed).instrument(span(&claimed)).await?;
        }
        Ok(())
    }

    fn account(&self, claimed: &ClaimedWrite) -> Option<&Account> {
        self.accounts
            .iter()
            .find(|account| account.account_id == claimed.operation.account_id.as_str())
    }

    async fn dispatch(&self, claimed: &ClaimedWrite) -> Result<(), StoreError> {
        let id = claimed.operation.id;
        if !self.store.email().mark_dispatching(id, &self.worker_id).await? {
            return Ok(());
        }
        let Some(account) = self.account(claimed) else {
            return self
                .store
                .email()
                .settle_write(claimed, &WriteOutcome::Failed("email.account_unknown".into()))
                .await;
        };
        let (add, remove) = change(claimed.kind);
        let answer = self
            .gmail
            .dispatch(
                Credential {
                    account_id: &account.account_id,
                    document: &account.write,
                },
                &format!("threads/{}/modify", claimed.provider_thread_id),
                &json!({ "addLabelIds": add, "removeLabelIds": remove }),
            )
            .await;
        let outcome = match answer {
            Ok(thread) => WriteOutcome::Succeeded(message_labels(&thread)),
            Err(error @ MailError::OutcomeUnknown(_)) => WriteOutcome::Uncertain(error.code().into()),
            Err(error) => WriteOutcome::Failed(error.code().into()),
        };
        tracing::info!(operation = %id, kind = claimed.kind.as_str(), outcome = ?outcome_name(&outcome),
            "email write settled");
        self.store.email().settle_write(claimed, &outcome).await
    }

    /// Reads the thread of an uncertain write; a read that fails leaves it for the next pass
    /// (its claim expires).
    async fn reconcile(&self, claimed: &ClaimedWrite) -> Result<(), StoreError> {
        let Some(account) = self.account(claimed) else {
            return Ok(());
        };
        let read = self
            .gmail
            .read(
                Credential {
                    account_id: &account.account_id,
                    document: &account.read,
                },
                &format!("threads/{}", claimed.provider_thread_id),
                &[("format", "minimal".to_owned())],
            )
            .await;
        let reading = match read {
            Ok(thread) => {
                let labels = message_labels(&thread);
                if shows_applied(claimed.kind, &labels) {
                    Reconciliation::Applied(labels)
                } else {
                    Reconciliation::NotApplied(labels)
                }
            }
            Err(MailError::Rejected { status: 404, .. }) => Reconciliation::Gone,
            Err(error) => {
                tracing::warn!(operation = %claimed.operation.id, code = error.code(),
                    "cannot read the thread of an uncertain email write; will try again");
                return Ok(());
            }
        };
        tracing::info!(operation = %claimed.operation.id, applied = matches!(reading, Reconciliation::Applied(_)),
            "uncertain email write reconciled");
        self.store.email().reconcile_write(claimed, &reading).await
    }
}

fn outcome_name(outcome: &WriteOutcome) -> &'static str {
    match outcome {
        WriteOutcome::Succeeded(_) => "succeeded",
        WriteOutcome::Failed(_) => "failed",
        WriteOutcome::Uncertain(_) => "uncertain",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(sets: &[&[&str]]) -> Vec<(String, Vec<String>)> {
        sets.iter()
            .enumerate()
            .map(|(index, set)| (index.to_string(), set.iter().map(|l| (*l).to_owned()).collect()))
            .collect()
    }

    #[test]
    fn the_labels_show_whether_a_write_applied() {
        assert!(shows_applied(MailboxWrite::Archive, &labels(&[&["UNREAD"], &[]])));
        assert!(!shows_applied(MailboxWrite::Archive, &labels(&[&[], &["INBOX"]])));
        assert!(shows_applied(MailboxWrite::MoveToInbox, &labels(&[&[], &["INBOX"]])));
        assert!(shows_applied(MailboxWrite::ReportSpam, &labels(&[&["SPAM"]])));
        assert!(!shows_applied(MailboxWrite::ReportSpam, &labels(&[&["SPAM", "INBOX"]])));
        assert!(shows_applied(MailboxWrite::NotSpam, &labels(&[&["INBOX"]])));
        assert!(!shows_applied(MailboxWrite::NotSpam, &labels(&[&["INBOX"], &["SPAM"]])));
    }
}

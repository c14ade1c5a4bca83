//! The unsubscribe commands the worker runs (with `AGENT_EMAIL_UNSUBSCRIBE_ENABLED=1`): each
//! confirmed target once, by its mechanism.
//!
//! - **One-click:** one request through the worker's [`OneClickTransport`] (public HTTPS on
//!   port 443, pinned, no redirects; one audit line).
//! - **Mailto:** one message through the account's send document, from the account's address
//!   to the header's one recipient with the header's subject and body and nothing else (no
//!   copy, no signature, no quoted mail). With neither a subject nor a body in the header the
//!   subject is `unsubscribe`, which list managers read.
//!
//! A target is marked `dispatching` (committed) before anything leaves, and settled from the
//! answer; an answer that proves nothing is uncertain and restores the row for the owner to
//! decide: nothing is ever sent again by itself.

use std::sync::Arc;

use base64::Engine as _;
use domain::email::UnsubscribeMechanism;
use mail_mcp::accounts::Account;
use mail_mcp::gmail::{Credential, GmailClient, MailError};
use store::{ClaimedUnsubscribe, Store, StoreError, TargetOutcome, UnsubscribeTargetRow};
use tracing::Instrument;

use crate::offer::MailtoTarget;
use crate::oneclick::{self, OneClickTransport, Outcome};
use crate::writes::WritePace;

/// The subject of a mailto unsubscribe whose header names neither a subject nor a body.
pub const DEFAULT_SUBJECT: &str = "unsubscribe";

/// Runs the unsubscribe commands of the accounts it holds.
#[derive(Debug)]
pub struct Unsubscriber {
    pub store: Store,
    pub gmail: Arc<GmailClient>,
    pub accounts: Vec<Account>,
    pub transport: OneClickTransport,
    pub worker_id: String,
    pub pace: WritePace,
}

/// The RFC 5322 message a mailto target sends from `from`.
pub fn mailto_message(from: &str, target: &MailtoTarget) -> Vec<u8> {
    let subject = match (&target.subject, &target.body) {
        (None, None) => DEFAULT_SUBJECT.to_owned(),
        (subject, _) => subject.clone().unwrap_or_default(),
    };
    mail_builder::MessageBuilder::new()
        .from(from)
        .to(target.address.as_str())
        .subject(subject)
        .text_body(target.body.clone().unwrap_or_default())
        .write_to_vec()
        .unwrap_or_default()
}

impl Unsubscriber {
    /// Runs until `shutdown` resolves (between targets).
    pub async fn run(self, shutdown: impl std::future::Future<Output = ()>) {
        tokio::pin!(shutdown);
        loop {
            if let Err(error) = self.pass().await {
                tracing::warn!(%error, "unsubscribe pass failed");
            }
            tokio::select! {
                () = tokio::time::sleep(self.pace.poll) => {}
                () = &mut shutdown => return,
            }
        }
    }

    /// Runs every queued command.
    pub async fn pass(&self) -> Result<(), StoreError> {
        while let Some(claimed) = self
            .store
            .email()
            .claim_unsubscribe(&self.worker_id, self.pace.lease)
            .await?
        {
            let span = tracing::info_span!("unsubscribe", operation_id = %claimed.operation.id);
            self.command(&claimed).instrument(span).await?;
        }
        Ok(())
    }

    async fn command(&self, claimed: &ClaimedUnsubscribe) -> Result<(), StoreError> {
        let id = claimed.operation.id;
        for target in claimed
            .targets
            .iter()
            .filter(|target| target.state == domain::email::EmailOperationState::Queued)
        {
            if !self
                .store
                .email()
                .mark_target_dispatching(id, target.position, &self.worker_id)
                .await?
            {
                continue;
            }
            let outcome = self.send(claimed, target).await;
            tracing::info!(
                position = target.position,
                mechanism = target.mechanism.as_str(),
                outcome = outcome_name(&outcome),
                "unsubscribe target settled"
            );
            self.store.email().settle_target(id, target.position, &outcome).await?;
        }
        Ok(())
    }

    async fn send(&self, claimed: &ClaimedUnsubscribe, target: &UnsubscribeTargetRow) -> TargetOutcome {
        match target.mechanism {
            UnsubscribeMechanism::OneClick => match self.transport.send(&target.target).await.outcome {
                Outcome::Succeeded => TargetOutcome::Succeeded,
                Outcome::Failed(code) => TargetOutcome::Failed(code.to_owned()),
                Outcome::Uncertain(code) => TargetOutcome::Uncertain(code.to_owned()),
            },
            UnsubscribeMechanism::Mailto => self.mailto(claimed, target).await,
        }
    }

    async fn mailto(&self, claimed: &ClaimedUnsubscribe, target: &UnsubscribeTargetRow) -> TargetOutcome {
        let Some(mailto) = MailtoTarget::parse(&target.target) else {
            return TargetOutcome::Failed(oneclick::DESTINATION_REFUSED.to_owned());
        };
        let account = self
            .accounts
            .iter()
            .find(|account| account.account_id == claimed.operation.account_id.as_str());
        let (Some(account), Some(from)) = (account, claimed.owner_address.as_deref()) else {
            return TargetOutcome::Failed("email.account_unknown".to_owned());
        };
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mailto_message(from, &mailto));
        let answer = self
            .gmail
            .dispatch(
                Credential {
                    account_id: &account.account_id,
                    document: &account.send,
                },
                "messages/send",
                &serde_json::json!({ "raw": raw }),
            )
            .await;
        match answer {
            Ok(_) => TargetOutcome::Succeeded,
            Err(error @ MailError::OutcomeUnknown(_)) => TargetOutcome::Uncertain(error.code().to_owned()),
            Err(error) => TargetOutcome::Failed(error.code().to_owned()),
        }
    }
}

fn outcome_name(outcome: &TargetOutcome) -> &'static str {
    match outcome {
        TargetOutcome::Succeeded => "succeeded",
        TargetOutcome::Failed(_) => "failed",
        TargetOutcome::Uncertain(_) => "uncertain",
    }
}

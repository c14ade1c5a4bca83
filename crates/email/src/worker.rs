//! The async worker's loop: refreshes the owner asked for (operations, claimed with a lease so a
//! crashed process's claim passes to another), every account on a background cadence, and the
//! replies the owner asked the agent to propose.
//! An account is updated by one refresh at a time in this process.

use domain::ids::AccountId;
use std::collections::HashMap;
use std::time::Duration;

use mail_mcp::accounts::ReadAccount;
use tokio::time::Instant;
use tracing::Instrument;

use crate::refresh::Refresher;

/// How the loop is paced.
#[derive(Clone, Debug)]
pub struct Pace {
    /// The background cadence: each account is updated at least this often.
    pub cadence: Duration,
    /// How often requested refreshes are looked for.
    pub poll: Duration,
    /// How long a claimed refresh is this process's before another may take it over.
    pub lease: Duration,
}

impl Default for Pace {
    fn default() -> Self {
        Pace {
            cadence: Duration::from_secs(300),
            poll: Duration::from_secs(1),
            lease: Duration::from_secs(600),
        }
    }
}

/// The async worker: its refresher, the accounts it holds (read documents only) and its name in
/// claims.
#[derive(Debug)]
pub struct AsyncWorker {
    pub refresher: Refresher,
    pub accounts: Vec<ReadAccount>,
    pub worker_id: String,
    pub pace: Pace,
    /// Gathers the owner's people from the mail each update brought (Memory and People on).
    pub people: bool,
}

impl AsyncWorker {
    /// Runs until `shutdown` resolves (between updates: an update in progress finishes first).
    pub async fn run(self, shutdown: impl std::future::Future<Output = ()>) {
        tokio::pin!(shutdown);
        let store = &self.refresher.store;
        let ids: Vec<AccountId> = self.accounts.iter().map(|account| account.account_id.clone()).collect();
        // Accounts are recorded (awaiting their first update) before anything else.
        while let Err(error) = store.email().ensure_accounts(&ids).await {
            tracing::warn!(%error, "cannot record the mail accounts; retrying");
            tokio::select! {
                () = tokio::time::sleep(self.pace.poll) => {}
                () = &mut shutdown => return,
            }
        }
        tracing::info!(worker = %self.worker_id, accounts = ids.len(), "async worker started");
        let mut updated: HashMap<AccountId, Instant> = HashMap::new();
        loop {
            self.requested(&mut updated).await;
            self.proposals().await;
            if self.people {
                self.imports().await;
            }
            for account in &self.accounts {
                let due = updated
                    .get(&account.account_id)
                    .is_none_or(|at| at.elapsed() >= self.pace.cadence);
                // A failure is logged and recorded on the account by `update`.
                if due && self.update(account, &mut updated).await.is_err() {
                    continue;
                }
            }
            tokio::select! {
                () = tokio::time::sleep(self.pace.poll) => {}
                () = &mut shutdown => break,
            }
        }
        tracing::info!("async worker stopping");
    }

    /// Runs every requested refresh that is due, one at a time.
    async fn requested(&self, updated: &mut HashMap<AccountId, Instant>) {
        let store = &self.refresher.store;
        loop {
            let operation = match store.email().claim_refresh(&self.worker_id, self.pace.lease).await {
                Ok(Some(operation)) => operation,
                Ok(None) => return,
                Err(error) => {
                    tracing::warn!(%error, "cannot claim refreshes");
                    return;
                }
            };
            let code = match self
                .accounts
                .iter()
                .find(|account| account.account_id == operation.account_id)
            {
                // Recorded once, since removed from the configuration.
                None => Some("email.account_unknown"),
                Some(account) => {
                    let span =
                        tracing::info_span!("refresh", operation_id = %operation.id, account_id = %account.account_id);
                    self.update(account, updated).instrument(span).await.err()
                }
            };
            if let Err(error) = store.email().settle_refresh(operation.id, code).await {
                tracing::warn!(operation = %operation.id, %error, "cannot settle a refresh");
            }
        }
    }

    /// Reads a few batches of the import that waits, if one does (a failure is logged; its claim
    /// expires and the import is read again from its cursor).
    async fn imports(&self) {
        match self.refresher.import_turn(&self.worker_id, self.pace.lease).await {
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "cannot read an import"),
        }
    }

    /// Writes every queued proposal, one at a time.
    async fn proposals(&self) {
        let store = &self.refresher.store;
        loop {
            let claimed = match store.email().claim_proposal(&self.worker_id, self.pace.lease).await {
                Ok(Some(claimed)) => claimed,
                Ok(None) => return,
                Err(error) => {
                    tracing::warn!(%error, "cannot claim proposals");
                    return;
                }
            };
            let span = tracing::info_span!("proposal", operation_id = %claimed.operation.id, draft_id = %claimed.draft);
            match self.refresher.propose(&claimed).instrument(span).await {
                Ok(outcome) => tracing::info!(operation = %claimed.operation.id, ?outcome, "reply proposed"),
                Err(error) => {
                    // Settled failed rather than written (and perhaps paid for) again; the owner
                    // may ask again.
                    tracing::warn!(operation = %claimed.operation.id, %error, "cannot propose a reply");
                    if let Err(error) = store.email().fail_proposal(&claimed, "email.proposal_failed").await {
                        tracing::warn!(operation = %claimed.operation.id, %error, "cannot settle a proposal");
                    }
                }
            }
        }
    }

    /// Updates one account; the failure's code (already recorded on the account).
    async fn update(
        &self,
        account: &ReadAccount,
        updated: &mut HashMap<AccountId, Instant>,
    ) -> Result<(), &'static str> {
        updated.insert(account.account_id.clone(), Instant::now());
        match self.refresher.update(account).await {
            Ok(done) => {
                tracing::info!(account = %account.account_id, kind = ?done.kind, new = done.new_messages,
                    relabelled = done.relabelled, assessed = done.assessed, "mail updated");
                if self.people {
                    // A failure leaves the messages ungathered: the next update gathers them.
                    match self.refresher.gather_people().await {
                        Ok(gathered) => tracing::debug!(
                            messages = gathered.people.messages,
                            people = gathered.people.created,
                            facts = gathered.people.facts,
                            beliefs = gathered.beliefs.created,
                            "mail gathered"
                        ),
                        Err(error) => tracing::warn!(%error, "cannot gather people"),
                    }
                }
                Ok(())
            }
            Err(error) => {
                tracing::warn!(account = %account.account_id, code = error.code(), %error, "mail update failed");
                Err(error.code())
            }
        }
    }
}

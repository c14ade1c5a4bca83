//! Import history in the async worker: an import the owner started is claimed (one worker at a
//! time, an expiring claim renewed with each batch) and read batch by batch from its cursor:
//! the range's synced messages are gathered into People again (correspondents, what senders say
//! of themselves; a forgotten person is never made again), and the owner's sent mail forms
//! beliefs as in [`crate::beliefs`], each model request charged to the import as well as to the
//! email allowances. A request goes only while the import's spending cap has room for its
//! ceiling; the first that has none ends the import (`spending_cap`). The import also ends when
//! its range is read (`range_read`) or its record limit reached (`record_limit`); a cancelled
//! one stops at its next batch. A few batches are read per turn of the worker's loop, so
//! refreshes are not held up by a long import.

use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use domain::ids::AccountId;
use domain::run::Cost;
use memory::people::{MailFormer, Proposing};
use store::people_imports::{ImportRow, reason};
use uuid::Uuid;

use crate::classify::Classifier;
use crate::refresh::Refresher;

/// The most batches one turn reads.
pub const BATCHES_PER_TURN: usize = 4;

/// The former of an import's beliefs: the memory model within the import's cap and the email
/// allowances, else the rules.
struct ImportBeliefs<'a> {
    refresher: &'a Refresher,
    choice: Option<(String, String)>,
    cap: Cost,
    /// What the import has spent, this turn's requests included.
    spent: Mutex<Cost>,
    /// A request found no room under the cap.
    capped: AtomicBool,
}

impl ImportBeliefs<'_> {
    fn spent(&self) -> Cost {
        *self.spent.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn add(&self, charge: Cost) {
        let mut spent = self.spent.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *spent = Cost::from_micros(spent.micros().saturating_add(charge.micros()));
    }
}

impl MailFormer for ImportBeliefs<'_> {
    fn propose<'a>(&'a self, account_id: &'a str, own_words: &'a str) -> Proposing<'a> {
        Box::pin(async move {
            let Classifier::Model(model) = self.refresher.classifier.as_ref() else {
                return memory::offline::propose(own_words);
            };
            if self.capped.load(Ordering::SeqCst) {
                return Vec::new();
            }
            let prepared = model.prepare_beliefs(own_words, self.choice.as_ref());
            if self.spent().micros().saturating_add(prepared.ceiling.micros()) > self.cap.micros() {
                self.capped.store(true, Ordering::SeqCst);
                return Vec::new();
            }
            let account = AccountId::from(account_id);
            match self.refresher.room_for(prepared.ceiling).await {
                Ok(None) => {}
                // An allowance is spent: the rules, free.
                Ok(Some(_)) => return memory::offline::propose(own_words),
                Err(error) => {
                    tracing::warn!(%account, %error, "cannot read the email allowances; the rules propose");
                    return memory::offline::propose(own_words);
                }
            }
            let (charge, reported, proposals) = match model.reply(&prepared).await {
                Ok(answered) => (
                    answered.charge,
                    answered.reported,
                    memory::model::proposals(&answered.value),
                ),
                Err(failed) => {
                    tracing::warn!(%account, error = %failed.error.kind(), "the memory model request failed");
                    (failed.charge, false, memory::offline::propose(own_words))
                }
            };
            self.add(charge);
            if let Err(error) = self
                .refresher
                .store
                .email()
                .record_charge(&account, charge.micros(), reported)
                .await
            {
                tracing::warn!(%account, %error, "cannot record a charge");
            }
            proposals
        })
    }
}

impl Refresher {
    /// Reads a few batches of one import `worker` can claim (see the module); the import worked
    /// on, `None` when none waits.
    pub async fn import_turn(&self, worker: &str, lease: Duration) -> Result<Option<Uuid>, store::StoreError> {
        let Some(import) = self.store.imports().claim(worker, lease).await? else {
            return Ok(None);
        };
        self.read_import(&import, worker, lease).await?;
        Ok(Some(import.id))
    }

    async fn read_import(&self, import: &ImportRow, worker: &str, lease: Duration) -> Result<(), store::StoreError> {
        let imports = self.store.imports();
        let former = ImportBeliefs {
            refresher: self,
            choice: self.memory_choice().await?,
            cap: import.spending_cap,
            spent: Mutex::new(import.spent),
            capped: AtomicBool::new(false),
        };
        for _ in 0..BATCHES_PER_TURN {
            let Some(read) = imports
                .read_batch(
                    import.id,
                    worker,
                    lease,
                    store::people_imports::BATCH,
                    &memory::people::read,
                )
                .await?
            else {
                // Cancelled, or taken over: nothing more is read.
                return Ok(());
            };
            let before = former.spent();
            let tally = memory::people::form_sent(&self.store, &import.principal, read.batch.sent, &former).await?;
            let spent = Cost::from_micros(former.spent().micros().saturating_sub(before.micros()));
            if !imports.progress(import.id, worker, spent, tally.created).await? {
                return Ok(());
            }
            let ended = if former.capped.load(Ordering::SeqCst) {
                Some(reason::SPENDING_CAP)
            } else {
                read.ended
            };
            if let Some(reason) = ended {
                imports.finish(import.id, worker, false, reason).await?;
                tracing::info!(import = %import.id, reason, "import finished");
                return Ok(());
            }
        }
        Ok(())
    }
}

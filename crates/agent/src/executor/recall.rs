//! Memory in a run: the beliefs recalled into its prompt (traced), and those a finished
//! conversation run forms from what the owner wrote.

use store::{ClaimedRun, StoreError};

use super::Executor;
use crate::history;

impl Executor {
    /// What the owner wrote for this run (its messages' text).
    async fn owner_words(&self, claimed: &ClaimedRun) -> Result<String, StoreError> {
        let events = self.store.work().session_history(claimed.lease.session).await?;
        Ok(history::owner_words(&events, claimed.lease.run.as_uuid()))
    }

    /// Forms the beliefs the owner's words in a finished conversation run state (a scheduled
    /// run's instruction is not a statement about the owner). A failure is logged: the run has
    /// ended either way.
    pub(super) async fn form_beliefs(&self, claimed: &ClaimedRun) {
        let lease = &claimed.lease;
        let formed = async {
            let words = self.owner_words(claimed).await?;
            let evidence = store::memory::Evidence::Run {
                session: lease.session.as_uuid(),
                run: lease.run.as_uuid(),
            };
            memory::form(
                &self.store,
                &claimed.principal,
                memory::offline::propose(&words),
                &evidence,
            )
            .await
        }
        .await;
        match formed {
            Ok(tally) => tracing::info!(
                run = %lease.run,
                created = tally.created,
                known = tally.known,
                forbidden = tally.forbidden,
                "beliefs formed"
            ),
            Err(error) => tracing::warn!(run = %lease.run, %error, "beliefs could not be formed"),
        }
    }

    /// The beliefs recalled for this run's message, traced, as the prompt's section (`None`
    /// when memory is off or nothing is recalled).
    pub(super) async fn recall(&self, claimed: &ClaimedRun) -> Result<Option<String>, StoreError> {
        if !self.memory {
            return Ok(None);
        }
        let words = self.owner_words(claimed).await?;
        let recalled = self
            .store
            .memory()
            .recall(&claimed.principal, claimed.lease.session.as_uuid(), &words)
            .await?;
        self.store
            .memory()
            .trace_recall(claimed.lease.run.as_uuid(), &recalled)
            .await?;
        Ok(memory::recalled_section(&recalled))
    }
}

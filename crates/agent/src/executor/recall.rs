//! Memory in a run: the beliefs recalled into its prompt (traced), and those a finished
//! conversation run forms from what the owner wrote.

use domain::agent::AgentConfiguration;
use domain::run::Cost;
use store::{ClaimedRun, StoreError};
use tracing::Instrument;

use super::{Executor, SCRIPTED, usage_cost};
use crate::history;
use crate::model::Deltas;

/// The memory model's answer is read whole: nothing of it reaches the conversation's stream.
struct Unstreamed;

impl Deltas for Unstreamed {
    fn text(&self, _delta: &str) {}
    fn reasoning(&self, _delta: &str) {}
}

impl Executor {
    /// What the owner wrote for this run (its messages' text).
    async fn owner_words(&self, claimed: &ClaimedRun) -> Result<String, StoreError> {
        let events = self.store.work().session_history(claimed.lease.session).await?;
        Ok(history::owner_words(&events, claimed.lease.run.as_uuid()))
    }

    /// Forms the beliefs the owner's words in a finished conversation run state (a scheduled
    /// run's instruction is not a statement about the owner), and keeps the people they name
    /// (`X is the owner's R`) as records. A failure is logged: the run has ended either way.
    ///
    /// The memory model the owner's settings held when the run was submitted proposes them
    /// ([`memory::model`]), one bounded call charged to the run while its cost limit has room,
    /// with the agent's provider. The rule-based former ([`memory::offline`]) proposes them
    /// instead when the agent's provider is the offline model, the run was submitted before
    /// memory models were kept, the run has spent its cost limit, or the call fails.
    pub(super) async fn form_beliefs(&self, claimed: &ClaimedRun, configuration: &AgentConfiguration) {
        let lease = &claimed.lease;
        let formed = async {
            let words = self.owner_words(claimed).await?;
            if words.trim().is_empty() {
                return Ok::<_, StoreError>((memory::Tally::default(), 0));
            }
            let proposals = match self.asked(claimed, configuration, &words).await? {
                Some(proposals) => proposals,
                None => memory::offline::propose(&words),
            };
            let evidence = store::memory::Evidence::Run {
                session: lease.session.as_uuid(),
                run: lease.run.as_uuid(),
            };
            let mentioned = memory::people::from_conversation(&proposals);
            let tally = memory::form(&self.store, &claimed.principal, proposals, &evidence).await?;
            let people = if mentioned.is_empty() {
                0
            } else {
                self.store
                    .people()
                    .mentioned(
                        &claimed.principal,
                        lease.session.as_uuid(),
                        lease.run.as_uuid(),
                        &mentioned,
                    )
                    .await?
            };
            Ok((tally, people))
        }
        .await;
        match formed {
            Ok((tally, people)) => tracing::info!(
                run = %lease.run,
                created = tally.created,
                known = tally.known,
                forbidden = tally.forbidden,
                people,
                "beliefs formed"
            ),
            Err(error) => tracing::warn!(run = %lease.run, %error, "beliefs could not be formed"),
        }
    }

    /// What the memory model proposes for `words` (the call charged to the run); `None` when it
    /// is not asked or its call failed (see [`Executor::form_beliefs`]).
    async fn asked(
        &self,
        claimed: &ClaimedRun,
        configuration: &AgentConfiguration,
        words: &str,
    ) -> Result<Option<Vec<memory::Proposal>>, StoreError> {
        let run = claimed.lease.run;
        let Some((model, effort)) = &claimed.memory_model else {
            return Ok(None);
        };
        if configuration.model.provider == SCRIPTED {
            return Ok(None);
        }
        let Some(provider) = self.providers.get(&configuration.model.provider) else {
            return Ok(None);
        };
        if self.store.work().forming_room(run).await?.micros() == 0 {
            tracing::info!(%run, "the run spent its cost limit: beliefs are formed without the memory model");
            return Ok(None);
        }
        let request = memory::model::request(model, effort, words);
        let span = tracing::info_span!("memory_model_call", model = %request.model);
        let response = provider.complete(&request, &Unstreamed).instrument(span).await;
        let response = match response {
            Ok(response) => response,
            Err(error) => {
                // The provider's words stay out of the log: its answer may echo the prompt.
                tracing::warn!(%run, error = %error.kind(), "the memory model call failed");
                return Ok(None);
            }
        };
        let cost = usage_cost(&response.usage, configuration);
        self.store
            .work()
            .charge_forming(
                run,
                response.usage.input_tokens,
                response.usage.output_tokens,
                Cost::from_micros(cost),
            )
            .await?;
        Ok(Some(memory::model::proposals(&response.text)))
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

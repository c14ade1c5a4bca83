//! The call worker's work, one bounded pass at a time ([`CallWorker::pass`]); the binary
//! (`main.rs`) runs a pass on every receipt's wake-up and every poll.
//!
//! At start, [`CallWorker::activate`] pushes the number's settings and reads them back; a
//! mismatch stops the role with a message naming the member. Then a pass, in order:
//! 1. **Receipts**: each receipt with unsettled deliveries is read back from the provider
//!    (`GET /v1/calls/{id}`); an ended call is recorded with its transcript and summary, and the
//!    `call_finished` notification in the same transaction when call notifications are on. A
//!    call still running leaves the receipt settled up to the delivery seen; the next delivery,
//!    or polling (4), settles it. Repeated and out-of-order deliveries are harmless.
//! 2. **Dispatch**: the one approved outbound call is journaled (`dispatching`) and sent once,
//!    after checking that the call configuration's revision is still the one its brief was
//!    approved under (otherwise it is `not_placed`, `revision_changed`, and the owner approves
//!    afresh). A lost answer makes it `uncertain`.
//! 3. **Reconciliation**: an uncertain dispatch is looked up in the provider's history by the
//!    reference it carried; found, it is dispatched; not found after [`RECONCILE_WINDOW_SECONDS`],
//!    it was not placed. It is never redialled, and it holds the reservation until resolved.
//! 4. **Running calls**: a dispatched call that ended is settled like a receipt; one running
//!    past `max_duration_minutes` (plus a minute's grace) is ended; one the provider no longer
//!    knows, or still reports running [`ABANDON_AFTER_SECONDS`] after it was ended, is settled
//!    without its result (`result_unavailable`), so the reservation is never held for ever.
//! 5. **Expiry**: transcripts and summaries of calls that ended more than 30 days ago are removed.
//! 6. **Redaction**: what a call the owner deleted left in conversations is erased
//!    (`store::Store::redact_call`).

use std::path::PathBuf;

use callprov::client::CallProvError;
use callprov::{Brief, CallDetail, Client};
use domain::call::{CallDirection, CallFailure};
use jiff::{SignedDuration, Timestamp};
use serde_json::Value;
use store::{CallResult, DispatchOutcome, ReceiptDue, Settled, Store};
use uuid::Uuid;

/// How long an uncertain dispatch is looked for in the provider's history before it counts as
/// not placed.
pub const RECONCILE_WINDOW_SECONDS: i64 = 600;
/// A dispatch journaled this long ago whose outcome was never recorded (its worker died
/// mid-request) becomes uncertain. Longer than the client's request timeout.
pub const ORPHANED_DISPATCH_SECONDS: f64 = 120.0;
/// The grace past `max_duration_minutes` before the call worker ends a call itself.
pub const TERMINATION_GRACE_SECONDS: i64 = 60;
/// A call the call worker ended that the provider still does not report ended this long after
/// is settled without its result, so the outbound reservation is never held for ever.
pub const ABANDON_AFTER_SECONDS: i64 = 600;
/// A receipt whose call is still running is looked at on every pass for this long after its
/// latest delivery; after that only a new delivery (or, outbound, polling) settles the call.
pub const PENDING_RECEIPT_SECONDS: i64 = 3600;
/// The most of each kind of work one pass does.
pub const BATCH: i64 = 50;

/// The call worker.
pub struct CallWorker {
    pub store: Store,
    pub client: Client,
    /// `CALLPROV_CONFIGURATION_FILE`, read on every dispatch so an edit takes effect at once.
    pub configuration: PathBuf,
    /// `AGENT_CALL_NOTIFICATIONS_ENABLED`: commit `call_finished` notifications.
    pub notify: bool,
}

/// What one pass did (counts only: no number, no content).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pass {
    pub recorded: u32,
    pub notified: u32,
    pub duplicates: u32,
    pub pending: u32,
    pub dispatched: u32,
    pub not_placed: u32,
    pub uncertain: u32,
    pub reconciled: u32,
    pub terminated: u32,
    /// Dispatched calls settled without their result (the provider lost them).
    pub abandoned: u32,
    /// Tool results and later replies redacted for deleted calls.
    pub redacted_results: u64,
    pub redacted_replies: u64,
    pub provider_errors: u32,
}

/// The result of an ended call, from the provider's detail; `None` while it runs.
pub fn result_of(detail: &CallDetail) -> Option<CallResult> {
    if !detail.completed {
        return None;
    }
    let direction = if detail.inbound {
        CallDirection::Inbound
    } else {
        CallDirection::Outbound
    };
    let counterpart = match direction {
        CallDirection::Inbound => detail.from.clone(),
        CallDirection::Outbound => detail.to.clone(),
    };
    let transcript: Vec<Value> = detail
        .transcripts
        .iter()
        .map(|turn| serde_json::json!({ "user": turn.user, "text": turn.text }))
        .collect();
    Some(CallResult {
        provider_call_id: detail.call_id.clone(),
        direction,
        counterpart,
        reference: detail.reference().and_then(|text| Uuid::parse_str(text).ok()),
        transcript: Value::Array(transcript),
        summary: detail.summary.clone(),
        answered_by: detail.answered_by.clone(),
        duration_seconds: detail
            .call_length
            .filter(|minutes| minutes.is_finite() && *minutes >= 0.0)
            .map(|minutes| (minutes * 60.0).round() as i32),
    })
}

/// Why the number's settings could not be put in force.
#[derive(Debug, thiserror::Error)]
pub enum ActivationError {
    #[error("{0}")]
    Configuration(#[from] callprov::LoadError),
    #[error("calling cannot be activated: {0}")]
    Provider(#[from] CallProvError),
}

impl CallWorker {
    /// Puts the number's settings in force: pushed from the configuration (the public profile
    /// alone), read back and compared. A provider that ignores or refuses a member, above all
    /// a clearing one, blocks activation: the role does not start.
    pub async fn activate(&self) -> Result<callprov::NumberSettings, ActivationError> {
        let config = callprov::config::load(&self.configuration)?;
        Ok(self.client.activate_number(&config).await?)
    }

    /// One bounded pass; `now` decides termination and expiry. A stage that fails does not
    /// keep the others from running (a receipt that cannot be settled must not stop dispatch,
    /// expiry or erasure); the first failure is returned after all of them ran.
    pub async fn pass(&self, now: Timestamp) -> anyhow::Result<Pass> {
        let mut pass = Pass::default();
        let mut failures: Vec<anyhow::Error> = Vec::new();
        let mut note = |stage: &'static str, outcome: anyhow::Result<()>| {
            if let Err(error) = outcome {
                tracing::warn!(stage, error = %format!("{error:#}"), "a call pass stage failed; the others ran");
                failures.push(error);
            }
        };
        note("receipts", self.receipts(now, &mut pass).await);
        note("dispatch", self.dispatch(&mut pass).await);
        note(
            "orphaned dispatches",
            self.store
                .orphaned_dispatches(ORPHANED_DISPATCH_SECONDS)
                .await
                .map(drop)
                .map_err(Into::into),
        );
        note("reconciliation", self.reconcile(now, &mut pass).await);
        note("running calls", self.running(now, &mut pass).await);
        note("erasure", self.erase(&mut pass).await);
        match failures.into_iter().next() {
            Some(error) => Err(error),
            None => Ok(pass),
        }
    }

    async fn erase(&self, pass: &mut Pass) -> anyhow::Result<()> {
        for call in self.store.calls_to_redact(BATCH).await? {
            let redaction = self.store.redact_call(call).await?;
            pass.redacted_results += redaction.tool_results;
            pass.redacted_replies += redaction.replies;
        }
        Ok(())
    }

    fn count(pass: &mut Pass, settled: Settled) {
        match settled {
            Settled::Recorded { notified, .. } => {
                pass.recorded += 1;
                pass.notified += u32::from(notified);
            }
            Settled::Duplicate => pass.duplicates += 1,
            Settled::Pending => pass.pending += 1,
            Settled::Unmatched => {}
        }
    }

    async fn receipts(&self, now: Timestamp, pass: &mut Pass) -> anyhow::Result<()> {
        let due: Vec<ReceiptDue> = self.store.receipts_due(BATCH).await?;
        let mut first_failure = None;
        for receipt in due {
            let result = match self.client.call(&receipt.provider_call_id).await {
                Ok(detail) if !detail.completed => {
                    // Still running: looked at again on the next pass, until it ends (an
                    // inbound call has no other way to be settled), or, for a receipt older
                    // than PENDING_RECEIPT_SECONDS, left to a later delivery.
                    pass.pending += 1;
                    let age = now.duration_since(receipt.last_received_at.to_jiff()).as_secs();
                    if age < PENDING_RECEIPT_SECONDS {
                        continue;
                    }
                    None
                }
                Ok(detail) => result_of(&detail),
                // The provider does not know the call: nothing to record, ever.
                Err(CallProvError::Refused { status: 404, .. }) => None,
                Err(error) => {
                    tracing::warn!(%error, "reading a call for its receipt failed; retried next pass");
                    pass.provider_errors += 1;
                    continue;
                }
            };
            match self.store.settle_receipt(&receipt, result.as_ref(), self.notify).await {
                Ok(Settled::Pending) => {}
                Ok(settled) => Self::count(pass, settled),
                Err(error) => {
                    // The others are settled all the same.
                    first_failure.get_or_insert(error);
                }
            }
        }
        match first_failure {
            Some(error) => Err(error.into()),
            None => Ok(()),
        }
    }

    async fn dispatch(&self, pass: &mut Pass) -> anyhow::Result<()> {
        let Some(due) = self.store.claim_dispatch().await? else {
            return Ok(());
        };
        let config = match callprov::config::load(&self.configuration) {
            Ok(config) => config,
            Err(error) => {
                tracing::warn!(%error, "the call configuration cannot be read; the approved call is not placed");
                self.store
                    .record_dispatch(
                        due.id,
                        &DispatchOutcome::NotPlaced {
                            failure: CallFailure::ConfigurationMissing,
                        },
                    )
                    .await?;
                pass.not_placed += 1;
                return Ok(());
            }
        };
        if config.revision().as_str() != due.revision {
            self.store
                .record_dispatch(
                    due.id,
                    &DispatchOutcome::NotPlaced {
                        failure: CallFailure::RevisionChanged,
                    },
                )
                .await?;
            pass.not_placed += 1;
            return Ok(());
        }
        let brief = match Brief::parse(&due.brief, &config) {
            Ok(brief) if brief.to == due.counterpart => brief,
            _ => {
                self.store
                    .record_dispatch(
                        due.id,
                        &DispatchOutcome::NotPlaced {
                            failure: CallFailure::BriefInvalid,
                        },
                    )
                    .await?;
                pass.not_placed += 1;
                return Ok(());
            }
        };
        let request = callprov::dispatch_request(&brief, &config, &due.id.to_string());
        let outcome = match self.client.dispatch(&request).await {
            Ok(dispatch) => {
                pass.dispatched += 1;
                DispatchOutcome::Accepted {
                    provider_call_id: dispatch.call_id,
                }
            }
            Err(CallProvError::Refused { .. } | CallProvError::Unreachable(_)) => {
                pass.not_placed += 1;
                DispatchOutcome::NotPlaced {
                    failure: CallFailure::Refused,
                }
            }
            Err(error) => {
                tracing::warn!(%error, "an outbound call's dispatch is uncertain; reconciling, never redialling");
                pass.uncertain += 1;
                DispatchOutcome::Uncertain
            }
        };
        self.store.record_dispatch(due.id, &outcome).await?;
        Ok(())
    }

    async fn reconcile(&self, now: Timestamp, pass: &mut Pass) -> anyhow::Result<()> {
        for call in self.store.uncertain_calls(BATCH).await? {
            // From the day before the dispatch, so a call placed near midnight is in range.
            let since = (call.dispatched_at - SignedDuration::from_hours(24))
                .strftime("%Y-%m-%d")
                .to_string();
            let history = match self.client.history(&call.counterpart, &since).await {
                Ok(history) => history,
                Err(error) => {
                    tracing::warn!(%error, "reading the call history failed; retried next pass");
                    pass.provider_errors += 1;
                    continue;
                }
            };
            let reference = call.id.to_string();
            let found = history
                .iter()
                .find(|entry| entry.reference() == Some(reference.as_str()));
            let outcome = match found {
                Some(entry) => DispatchOutcome::Accepted {
                    provider_call_id: entry.call_id.clone(),
                },
                None if now.duration_since(call.dispatched_at).as_secs() >= RECONCILE_WINDOW_SECONDS => {
                    DispatchOutcome::NotPlaced {
                        failure: CallFailure::NotFoundAtProvider,
                    }
                }
                None => continue,
            };
            self.store.record_dispatch(call.id, &outcome).await?;
            pass.reconciled += 1;
        }
        Ok(())
    }

    async fn running(&self, now: Timestamp, pass: &mut Pass) -> anyhow::Result<()> {
        let calls = self.store.running_calls(BATCH).await?;
        if calls.is_empty() {
            return Ok(());
        }
        let max_minutes = callprov::config::load(&self.configuration)
            .map(|config| config.max_duration_minutes)
            .unwrap_or(callprov::config::MAX_DURATION_MINUTES);
        let limit = i64::from(max_minutes) * 60 + TERMINATION_GRACE_SECONDS;
        for call in calls {
            let abandoned = call
                .terminated_at
                .is_some_and(|at| now.duration_since(at).as_secs() > ABANDON_AFTER_SECONDS);
            let detail = match self.client.call(&call.provider_call_id).await {
                Ok(detail) => detail,
                // The provider no longer knows it, or never reported an end after it was
                // stopped: settled without its result, so the reservation is released.
                Err(CallProvError::Refused { status: 404, .. }) => {
                    self.abandon(&call, CallFailure::ResultUnavailable, pass).await?;
                    continue;
                }
                Err(error) => {
                    tracing::warn!(%error, "reading a running call failed; retried next pass");
                    pass.provider_errors += 1;
                    if abandoned {
                        self.abandon(&call, CallFailure::ResultUnavailable, pass).await?;
                    }
                    continue;
                }
            };
            if let Some(result) = result_of(&detail) {
                let settled = self.store.settle_call_result(&result, self.notify).await?;
                Self::count(pass, settled);
            } else if abandoned {
                self.abandon(&call, CallFailure::ResultUnavailable, pass).await?;
            } else if call.terminated_at.is_none() && now.duration_since(call.dispatched_at).as_secs() > limit {
                match self.client.stop(&call.provider_call_id).await {
                    Ok(()) => {
                        self.store.mark_terminated(call.id).await?;
                        pass.terminated += 1;
                    }
                    Err(error) => {
                        tracing::warn!(%error, "ending a call past its duration failed; retried next pass");
                        pass.provider_errors += 1;
                    }
                }
            }
        }
        Ok(())
    }

    async fn abandon(&self, call: &store::RunningCall, failure: CallFailure, pass: &mut Pass) -> anyhow::Result<()> {
        if self.store.abandon_call(call.id, failure, self.notify).await? {
            pass.abandoned += 1;
        }
        Ok(())
    }
}

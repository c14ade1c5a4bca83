//! Executes one claimed run until it parks, ends, or is lost.
//!
//! Each pass settles the latest step's tool invocations in order, then asks the model again:
//! - `dispatching` found on entry means a previous worker died mid-call: `outcome_unknown`,
//!   never retried;
//! - a queued read-only call runs at once; a queued call that needs approval parks the run;
//!   `owner.ask` parks it on a question;
//! - an approved call is committed as `dispatching` first, then run exactly once.
//!
//! Limits are checked before every model call and after every step; the deadline bounds the
//! whole execution.

use std::sync::Arc;
use std::time::Duration;

use domain::agent::AgentConfiguration;
use domain::approval::{InvocationState, display_arguments};
use domain::run::Cost;
use serde_json::{Value, json};
use store::{ClaimedRun, InvocationRow, Lease, ModelStep, NewCall, RunCounters, RunKind, Store, StoreError};
use tokio::sync::mpsc;
use tracing::Instrument;

use crate::history;
use crate::model::{ChatMessage, ModelProvider, ModelRequest};
use crate::scripted::Scripted;
use crate::tools::{ASK_OWNER, RunTools, ToolOutcome, Toolbox};
use mail_mcp::tools::{MailService, Reconciliation};
use store::NewReconciliation;

mod recall;
mod transient;

use transient::{TransientSink, relay_transient};

/// The notification channel for transient output (text and reasoning deltas).
pub use store::TRANSIENT_CHANNEL;
/// The code of a call refused because it was marked approved without an approval of exactly it.
pub const APPROVAL_MISSING: &str = "approval.missing";
/// The code of a browser action whose task permission the owner stopped before it started.
pub const TASK_PERMISSION_STOPPED: &str = "browser.task_permission_stopped";

/// A notice's most bytes: sealed, its `NOTIFY` payload stays under 8000 bytes.
const TRANSIENT_MAX_BYTES: usize = store::sealed::MAX_NOTICE_BYTES;

/// The model providers this worker can reach.
/// The offline model's provider name.
const SCRIPTED: &str = "scripted";

#[derive(Clone)]
pub struct Providers {
    scripted: Arc<Scripted>,
    openai: Option<Arc<dyn ModelProvider>>,
}

impl std::fmt::Debug for Providers {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Providers")
            .field("openai", &self.openai.is_some())
            .finish()
    }
}

impl Providers {
    pub fn new(openai: Option<Arc<dyn ModelProvider>>) -> Providers {
        Providers {
            scripted: Arc::new(Scripted),
            openai,
        }
    }

    fn get(&self, name: &str) -> Option<&dyn ModelProvider> {
        match name {
            SCRIPTED => Some(self.scripted.as_ref()),
            "openai" => self.openai.as_deref(),
            _ => None,
        }
    }
}

/// Asks an execution to stop at its next safe point.
#[derive(Debug, Default)]
pub struct Stop {
    raised: std::sync::atomic::AtomicBool,
    notify: tokio::sync::Notify,
}

impl Stop {
    pub fn raise(&self) {
        self.raised.store(true, std::sync::atomic::Ordering::SeqCst);
        self.notify.notify_waiters();
    }

    pub fn is_raised(&self) -> bool {
        self.raised.load(std::sync::atomic::Ordering::SeqCst)
    }

    /// Resolves once raised.
    async fn raised(&self) {
        loop {
            let notified = self.notify.notified();
            if self.is_raised() {
                return;
            }
            notified.await;
        }
    }
}

/// How an execution ended.
#[derive(Debug, PartialEq, Eq)]
pub enum Finish {
    /// Waiting for the owner (approval or answer).
    Parked,
    /// Completed or failed.
    Ended,
    /// Cancelled, expired or taken by another worker meanwhile.
    Lost,
}

#[derive(Clone, Debug)]
pub struct Executor {
    pub store: Store,
    pub providers: Providers,
    pub http: reqwest::Client,
    /// The connected mail accounts, when mail is on.
    pub mail: Option<Arc<MailService>>,
    /// Unsubscribe assistance is on in this worker: its Chat tools are offered.
    pub subscriptions: bool,
    /// Calling is on in this worker: its Chat tools are offered.
    pub calls: Option<Arc<crate::call_tools::CallTools>>,
    /// The hosted browser is on in this worker: `browser.act` is offered.
    pub browser: Option<Arc<crate::browser_tools::BrowserTools>>,
    /// Memory is on in this worker: a run's prompt receives the beliefs recalled for its
    /// message (each recall traced), and what the owner wrote in a finished conversation run
    /// forms beliefs.
    pub memory: bool,
}

fn price(tokens: i64, per_million: Option<&String>) -> Cost {
    let rate = per_million.and_then(|text| Cost::parse(text).ok()).unwrap_or_default();
    let micros = i128::from(tokens) * i128::from(rate.micros());
    Cost::from_micros(i64::try_from((micros + 999_999) / 1_000_000).unwrap_or(i64::MAX))
}

/// What a model call's `usage` cost at the agent's prices, in micros.
fn usage_cost(usage: &crate::model::Usage, configuration: &AgentConfiguration) -> i64 {
    price(usage.input_tokens, configuration.model.input_cost_per_mtok.as_ref())
        .micros()
        .saturating_add(price(usage.output_tokens, configuration.model.output_cost_per_mtok.as_ref()).micros())
}

fn outcome_value(outcome: &ToolOutcome) -> (InvocationState, Value, Option<&'static str>) {
    match outcome {
        ToolOutcome::Succeeded(value) => (InvocationState::Succeeded, value.clone(), None),
        ToolOutcome::Failed { code, message } => (InvocationState::Failed, json!({ "error": message }), Some(code)),
        ToolOutcome::Uncertain { code, message, .. } => {
            (InvocationState::OutcomeUnknown, json!({ "error": message }), Some(code))
        }
    }
}

/// The stored form of a mail reconciliation.
fn new_reconciliation(reconciliation: &Reconciliation) -> NewReconciliation<'_> {
    NewReconciliation {
        account_id: &reconciliation.account_id,
        operation: reconciliation.operation.as_str(),
        message_id: &reconciliation.message_id,
    }
}

impl Executor {
    /// Runs `claimed` until it parks, ends or is lost.
    pub async fn execute(&self, claimed: ClaimedRun, stop: &Stop) -> Result<Finish, StoreError> {
        let lease = claimed.lease.clone();
        let configuration: AgentConfiguration = match serde_json::from_value(claimed.configuration.clone()) {
            Ok(configuration) => configuration,
            Err(error) => {
                let detail = format!("the pinned agent configuration cannot be read: {error}");
                return self
                    .fail(&lease, "agent.configuration_unreadable", &detail, &claimed.counters)
                    .await;
            }
        };
        if claimed.kind == RunKind::DraftSend {
            return self.send_draft(&claimed, &configuration, stop).await;
        }
        let Some(provider) = self.providers.get(&configuration.model.provider) else {
            let detail = format!(
                "model provider `{}` is not configured on this worker",
                configuration.model.provider
            );
            return self
                .fail(&lease, "model.provider_unavailable", &detail, &claimed.counters)
                .await;
        };
        let run_tools = RunTools {
            configuration: &configuration,
            scheduled_scopes: claimed.scheduled_scopes.as_deref(),
            session: lease.session,
        };
        let toolbox = Toolbox::for_run(
            run_tools,
            self.http.clone(),
            self.mail.clone(),
            self.subscriptions,
            self.calls.clone(),
            self.browser.clone(),
        );
        let (sender, receiver) = mpsc::unbounded_channel();
        let relay = tokio::spawn(relay_transient(self.store.clone(), lease.session, lease.run, receiver));
        let sink = TransientSink { sender };
        let outcome = self
            .drive(&claimed, &configuration, provider, &toolbox, &sink, stop)
            .await;
        drop(sink);
        if let Err(error) = relay.await {
            // Deltas are transient; the persisted step is what counts, so the run goes on.
            tracing::error!(%error, run = %lease.run, "the delta relay stopped");
        }
        // A run that used the browser closes it when it ends (a parked one keeps its page; the
        // browser role closes a browser left idle).
        if matches!(outcome, Ok(Finish::Ended)) && self.memory && claimed.scheduled_scopes.is_none() {
            self.form_beliefs(&claimed, &configuration).await;
        }
        if let (Ok(Finish::Ended), Some(browser)) = (&outcome, toolbox.browser()) {
            let used = self.store.work().invocations(lease.run).await.is_ok_and(|invocations| {
                invocations
                    .iter()
                    .any(|invocation| invocation.tool == crate::browser_tools::ACT)
            });
            if used {
                browser.close(lease.run).await;
            }
        }
        outcome
    }

    async fn fail(
        &self,
        lease: &Lease,
        code: &str,
        detail: &str,
        counters: &RunCounters,
    ) -> Result<Finish, StoreError> {
        tracing::warn!(run = %lease.run, code, "run failed");
        Ok(match self.store.work().fail_run(lease, code, detail, counters).await? {
            Some(()) => Finish::Ended,
            None => Finish::Lost,
        })
    }

    /// A frozen draft's run: its one `send_message` call is settled like any call (parked for
    /// the owner's approval, dispatched once after approve-once), and the run ends with it. No
    /// model is asked, so none needs to be reachable.
    async fn send_draft(
        &self,
        claimed: &ClaimedRun,
        configuration: &AgentConfiguration,
        stop: &Stop,
    ) -> Result<Finish, StoreError> {
        let run_tools = RunTools {
            configuration,
            scheduled_scopes: None,
            session: claimed.lease.session,
        };
        let toolbox = Toolbox::for_run(
            run_tools,
            self.http.clone(),
            self.mail.clone(),
            self.subscriptions,
            self.calls.clone(),
            self.browser.clone(),
        );
        let wait_seconds = configuration.wait_timeout_seconds();
        if let Some(finish) = self
            .settle_all(claimed, &toolbox, wait_seconds, &claimed.counters, stop)
            .await?
        {
            return Ok(finish);
        }
        Ok(
            match self
                .store
                .work()
                .complete_run(&claimed.lease, &claimed.counters)
                .await?
            {
                Some(()) => Finish::Ended,
                None => Finish::Lost,
            },
        )
    }

    /// Settles the run's invocations in order; `Some` when the execution stops here.
    async fn settle_all(
        &self,
        claimed: &ClaimedRun,
        toolbox: &Toolbox,
        wait_seconds: u32,
        counters: &RunCounters,
        stop: &Stop,
    ) -> Result<Option<Finish>, StoreError> {
        let lease = &claimed.lease;
        for invocation in self.store.work().invocations(lease.run).await? {
            if stop.is_raised() {
                return Ok(Some(Finish::Lost));
            }
            if invocation.state == InvocationState::Queued
                && let Some(scope) = toolbox.withheld_scope(&invocation.tool)
            {
                // A scheduled run holds only the tools its schedule requested scopes for:
                // reaching for another ends the run with the schedule authorization failure.
                let detail = format!(
                    "this schedule did not request the `{scope}` scope that `{}` needs; a schedule that \
                     uses mail must be created over HTTP with exactly the read and write use scopes",
                    invocation.tool
                );
                if let Some(finish) = self
                    .refuse(lease, &invocation, store::AUTHORIZATION_FAILED, &detail)
                    .await?
                {
                    return Ok(Some(finish));
                }
                return self
                    .fail(lease, store::AUTHORIZATION_FAILED, &detail, counters)
                    .await
                    .map(Some);
            }
            // A span per call (`tool{call_id tool}`): its dispatch and outcome lines name it.
            let span = tracing::info_span!("tool", call_id = %invocation.call_id, tool = %invocation.tool);
            if let Some(finish) = self
                .settle(claimed, toolbox, &invocation, wait_seconds)
                .instrument(span)
                .await?
            {
                return Ok(Some(finish));
            }
        }
        Ok(None)
    }

    async fn drive(
        &self,
        claimed: &ClaimedRun,
        configuration: &AgentConfiguration,
        provider: &dyn ModelProvider,
        toolbox: &Toolbox,
        sink: &TransientSink,
        stop: &Stop,
    ) -> Result<Finish, StoreError> {
        let lease = &claimed.lease;
        let limits = claimed.run.limits;
        let mut counters = claimed.counters;
        // A scheduled run waits for the owner as its schedule says, any other as its agent does.
        let wait_seconds = claimed
            .wait_timeout_seconds
            .unwrap_or_else(|| configuration.wait_timeout_seconds());
        // Recalled once per execution, for the run's own message.
        let recalled = if claimed.kind == RunKind::Agent {
            self.recall(claimed).await?
        } else {
            None
        };
        loop {
            // 1. Settle the latest step's invocations, in order.
            if let Some(finish) = self.settle_all(claimed, toolbox, wait_seconds, &counters, stop).await? {
                return Ok(finish);
            }
            if stop.is_raised() {
                return Ok(Finish::Lost);
            }
            // 2. Limits before asking the model again.
            if counters.steps >= limits.max_steps {
                return self
                    .fail(lease, "limit.max_steps", "the run reached its step limit", &counters)
                    .await;
            }
            if counters.model_calls >= limits.max_model_calls {
                return self
                    .fail(
                        lease,
                        "limit.max_model_calls",
                        "the run reached its model call limit",
                        &counters,
                    )
                    .await;
            }
            // 3. Ask the model.
            let events = self.store.work().session_history(lease.session).await?;
            let mut messages = vec![ChatMessage::System(configuration.instructions.clone())];
            if let Some(section) = &recalled {
                messages.push(ChatMessage::System(section.clone()));
            }
            messages.extend(history::build(&events));
            // The owner's model settings at submit time win over the agent's defaults; the
            // provider stays the agent's.
            let (model, reasoning_effort) = match &claimed.chat_model {
                Some((model, effort)) => (model.clone(), (effort != "none").then(|| effort.clone())),
                None => (
                    configuration.model.model.clone(),
                    configuration.model.reasoning_effort.clone(),
                ),
            };
            let request = ModelRequest {
                model,
                reasoning_effort,
                messages,
                tools: toolbox.specs(),
                max_output_tokens: None,
            };
            // A model call has no side effect: it is abandoned when the run is stopped. Its span
            // (`model_call{step model}`) carries ids and sizes, never the messages.
            let span = tracing::info_span!("model_call", step = counters.steps + 1, model = %request.model);
            let call = async {
                let response = provider.complete(&request, sink).await;
                match &response {
                    Ok(answer) => tracing::info!(
                        tool_calls = answer.tool_calls.len(),
                        input_tokens = answer.usage.input_tokens,
                        output_tokens = answer.usage.output_tokens,
                        "the model answered"
                    ),
                    // The provider's words stay in the run's record: its answer may echo the prompt.
                    Err(error) => tracing::warn!(error = %error.kind(), "the model call failed"),
                }
                response
            }
            .instrument(span);
            let response = tokio::select! {
                response = call => response,
                () = stop.raised() => return Ok(Finish::Lost),
            };
            let response = match response {
                Ok(response) => response,
                Err(error) => return self.fail(lease, "model.error", &error.to_string(), &counters).await,
            };
            sink.flush().await;
            let cost = usage_cost(&response.usage, configuration);
            let mut arguments: Vec<Value> = Vec::with_capacity(response.tool_calls.len());
            for call in &response.tool_calls {
                arguments.push(toolbox.pin(lease.run, &call.name, &call.arguments).await);
            }
            let step = ModelStep {
                text: &response.text,
                calls: response
                    .tool_calls
                    .iter()
                    .zip(&arguments)
                    .map(|(call, arguments)| NewCall {
                        call_id: &call.id,
                        tool: &call.name,
                        arguments,
                        risk: toolbox.get(&call.name).map(|tool| tool.risk),
                    })
                    .collect(),
                input_tokens: response.usage.input_tokens,
                output_tokens: response.usage.output_tokens,
                cost: Cost::from_micros(cost),
            };
            let Some(invocations) = self.store.work().record_model_step(lease, step).await? else {
                return Ok(Finish::Lost);
            };
            counters.steps += 1;
            counters.model_calls += 1;
            counters.tool_calls += u32::try_from(invocations.len()).unwrap_or(u32::MAX);
            counters.cost = Cost::from_micros(counters.cost.micros().saturating_add(cost));
            counters.input_tokens += response.usage.input_tokens;
            counters.output_tokens += response.usage.output_tokens;
            // 4. Limits after the step.
            if counters.cost > limits.max_cost {
                return self
                    .fail(lease, "limit.max_cost", "the run exceeded its cost limit", &counters)
                    .await;
            }
            if counters.tool_calls > limits.max_tool_calls {
                return self
                    .fail(
                        lease,
                        "limit.max_tool_calls",
                        "the run exceeded its tool call limit",
                        &counters,
                    )
                    .await;
            }
            if invocations.is_empty() {
                return Ok(match self.store.work().complete_run(lease, &counters).await? {
                    Some(()) => Finish::Ended,
                    None => Finish::Lost,
                });
            }
        }
    }

    /// Settles an invocation as failed without running it; the model is told why.
    async fn refuse(
        &self,
        lease: &Lease,
        invocation: &InvocationRow,
        code: &str,
        message: &str,
    ) -> Result<Option<Finish>, StoreError> {
        let result = json!({ "error": message });
        let recorded = self
            .store
            .work()
            .settle_invocation(lease, invocation, InvocationState::Failed, &result, Some(code), None)
            .await?;
        Ok(recorded.is_none().then_some(Finish::Lost))
    }

    /// Moves one invocation forward; `Some` when the execution stops here. A question or an
    /// approval parks the run for at most `wait_seconds`.
    async fn settle(
        &self,
        claimed: &ClaimedRun,
        toolbox: &Toolbox,
        invocation: &InvocationRow,
        wait_seconds: u32,
    ) -> Result<Option<Finish>, StoreError> {
        let lease = &claimed.lease;
        let lost = |recorded: Option<()>| recorded.is_none().then_some(Finish::Lost);
        match invocation.state {
            InvocationState::Dispatching => {
                // A previous worker died (or lost the run) during this call: its effect may
                // have happened, so it is never repeated.
                tracing::warn!(run = %lease.run, invocation = %invocation.id, "invocation outcome unknown after a crash");
                let result =
                    json!({ "error": "the worker stopped while this action was in progress; it was not repeated" });
                // A mail write or send is looked for in the mailbox (from the reconciliation it
                // armed when dispatched, whatever this worker's mail configuration); anything else
                // stays unknown.
                let reconciliation = toolbox.reconciliation_for(invocation);
                let recorded = self
                    .store
                    .work()
                    .settle_invocation(
                        lease,
                        invocation,
                        InvocationState::OutcomeUnknown,
                        &result,
                        Some("tool.outcome_unknown"),
                        reconciliation.as_ref().map(new_reconciliation).as_ref(),
                    )
                    .await?;
                Ok(lost(recorded))
            }
            InvocationState::Queued => {
                let Some(tool) = toolbox.get(&invocation.tool) else {
                    let message = format!("no tool `{}` is available", invocation.tool);
                    return self.refuse(lease, invocation, "tool.unknown", &message).await;
                };
                if tool.name == ASK_OWNER {
                    let question = invocation.arguments["question"]
                        .as_str()
                        .map(str::trim)
                        .unwrap_or_default();
                    if question.is_empty() {
                        let message = "`question` must be a non-empty string";
                        return self.refuse(lease, invocation, "tool.invalid_arguments", message).await;
                    }
                    let parked = self
                        .store
                        .work()
                        .park_for_question(lease, invocation, question, wait_seconds)
                        .await?;
                    return Ok(Some(if parked.is_some() { Finish::Parked } else { Finish::Lost }));
                }
                if toolbox.needs_approval(invocation) {
                    // The owner is never asked to approve what cannot be done.
                    if let Err(message) = toolbox.check_arguments(invocation) {
                        return self.refuse(lease, invocation, "tool.invalid_arguments", &message).await;
                    }
                    // After a write or send of unknown outcome, the mailbox is checked before
                    // another one to the same account is proposed (it might repeat the first).
                    if let Some(effect) = toolbox.reconciliation_for(invocation)
                        && self
                            .store
                            .mail_outcome_open(lease.session, &effect.account_id, effect.operation.as_str())
                            .await?
                    {
                        let message = format!(
                            "an earlier {} from mail account `{}` in this conversation has an unknown outcome and \
                             the mailbox is still being checked; wait for its mail.reconciled event before proposing another",
                            effect.operation.as_str(),
                            effect.account_id
                        );
                        return self
                            .refuse(lease, invocation, "mail.reconciliation_pending", &message)
                            .await;
                    }
                    let shown = display_arguments(&invocation.arguments);
                    // A browser action may be covered by the run's task permission in force;
                    // otherwise its approval offers one (except for an exception).
                    let mut offer = None;
                    if tool.name == crate::browser_tools::ACT {
                        let origins = match self.store.work().session_browser(lease.session).await? {
                            Some(profile) => profile.origins,
                            None => Vec::new(),
                        };
                        let limits = toolbox.browser().map(|browser| browser.limits).unwrap_or_default();
                        let (origin, exception, offered) =
                            crate::browser_tools::approval_terms(&invocation.arguments, &origins, limits);
                        if let Some(origin) = origin {
                            match self
                                .store
                                .work()
                                .cover_by_task_permission(lease, invocation, tool.risk, &shown, &origin, exception)
                                .await?
                            {
                                store::Cover::Covered(permission) => {
                                    tracing::info!(%permission, "a task permission allowed the browser action");
                                    let mut approved = invocation.clone();
                                    approved.state = InvocationState::Approved;
                                    return self.dispatch_approved(claimed, toolbox, &approved).await;
                                }
                                store::Cover::Lost => return Ok(Some(Finish::Lost)),
                                store::Cover::NotCovered => {}
                            }
                        }
                        offer = offered;
                    }
                    let parked = self
                        .store
                        .work()
                        .park_for_approval(lease, invocation, tool.risk, &shown, offer.as_ref(), wait_seconds)
                        .await?;
                    return Ok(Some(if parked.is_some() { Finish::Parked } else { Finish::Lost }));
                }
                tracing::info!("dispatching the call (it needs no approval)");
                let outcome = toolbox.execute(&self.store, &claimed.principal, invocation).await;
                let (state, result, code) = outcome_value(&outcome);
                tracing::info!(state = state.as_str(), code, "call settled");
                let state = if state == InvocationState::OutcomeUnknown {
                    InvocationState::Failed
                } else {
                    state
                };
                let recorded = self
                    .store
                    .work()
                    .settle_invocation(lease, invocation, state, &result, code, None)
                    .await?;
                Ok(lost(recorded))
            }
            InvocationState::Approved => self.dispatch_approved(claimed, toolbox, invocation).await,
            InvocationState::AwaitingApproval | InvocationState::AwaitingAnswer => Ok(Some(Finish::Parked)),
            _ => Ok(None),
        }
    }

    /// Dispatches an approved call: `dispatching` committed first, then run exactly once.
    async fn dispatch_approved(
        &self,
        claimed: &ClaimedRun,
        toolbox: &Toolbox,
        invocation: &InvocationRow,
    ) -> Result<Option<Finish>, StoreError> {
        let lease = &claimed.lease;
        // A mail write or send arms its reconciliation before it can reach the provider.
        let effect = toolbox.reconciliation_for(invocation);
        let armed = effect.as_ref().map(new_reconciliation);
        match self
            .store
            .work()
            .begin_dispatch(lease, invocation, armed.as_ref())
            .await?
        {
            store::Dispatch::Started => {}
            store::Dispatch::Lost => return Ok(Some(Finish::Lost)),
            store::Dispatch::Stopped => {
                tracing::info!("the task permission that allowed this browser action was stopped; not made");
                return self
                    .refuse(
                        lease,
                        invocation,
                        TASK_PERMISSION_STOPPED,
                        "the owner stopped the task permission that allowed this action; it was not made. Ask                          before acting on the website again",
                    )
                    .await;
            }
            store::Dispatch::Unapproved => {
                // Only an approval moves a call to `approved`: this state was written by
                // something else. Never dispatched; the transcript and the log say why.
                tracing::error!(
                    run = %lease.run,
                    invocation = %invocation.id,
                    tool = %invocation.tool,
                    "a call marked approved has no approval of exactly it; refused, not dispatched"
                );
                return self
                    .refuse(
                        lease,
                        invocation,
                        APPROVAL_MISSING,
                        "this call was marked approved, but the owner approved no call with exactly this tool \
                         and these arguments; it was not made",
                    )
                    .await;
            }
        }
        tracing::info!("dispatching the approved call");
        let outcome = toolbox.execute(&self.store, &claimed.principal, invocation).await;
        let (state, result, code) = outcome_value(&outcome);
        tracing::info!(state = state.as_str(), code, "call settled");
        let reconciliation = match &outcome {
            ToolOutcome::Uncertain {
                reconciliation: Some(reconciliation),
                ..
            } => Some(new_reconciliation(reconciliation)),
            _ => None,
        };
        self.store
            .work()
            .finish_dispatch(lease.session, invocation, state, &result, code, reconciliation.as_ref())
            .await?;
        Ok(None)
    }
}

/// How long from `now` until `deadline`, zero when it passed.
pub fn until(deadline: jiff::Timestamp, now: jiff::Timestamp) -> Duration {
    let remaining = deadline.as_millisecond() - now.as_millisecond();
    Duration::from_millis(u64::try_from(remaining).unwrap_or(0))
}

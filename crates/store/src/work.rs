//! The worker's side of runs: claims with leases, recorded model steps, tool invocations
//! (dispatching is committed before any side effect), parking for approvals and questions, and
//! run endings. Every transition but the end of a dispatch is guarded by the worker's lease: a
//! worker that lost its run (cancelled, expired, claimed by another) can no longer write to it.

use domain::approval::{ApprovalStatus, DisplayedArguments, InvocationState, Risk, display_arguments};
use domain::ids::{PrincipalId, RunId, SessionId};
use domain::run::{Cost, RunState};
use serde_json::{Value, json};
use sqlx::{FromRow, PgConnection};
use uuid::Uuid;
use wire::event::{
    ApprovalRequested, AssistantMessage, CancelReason, Event, QuestionAsked, RunUsage, StepUsage, ToolCall, ToolStarted,
};

use crate::ending::{Ending, end_run};
use crate::events::append;
use crate::invocations::{INVOCATION_COLUMNS, InvocationRow, write_result};
use crate::mail::NewReconciliation;
use crate::runs::{RUN_COLUMNS, RunRow, active_states_sql};
use crate::wake::{Hint, hint};
use crate::{Result, Store, StoreError};

/// Push notifications for approvals and questions wait this long (the contract's delay).
const PUSH_DELAY_SECONDS: f64 = 30.0;

/// A worker's hold on a run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Lease {
    pub run: RunId,
    pub session: SessionId,
    pub worker: String,
}

/// What a run has used so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RunCounters {
    pub steps: u32,
    pub model_calls: u32,
    pub tool_calls: u32,
    pub cost: Cost,
    pub input_tokens: i64,
    pub output_tokens: i64,
}

/// A claimed run with everything needed to execute it.
#[derive(Debug)]
pub struct ClaimedRun {
    pub lease: Lease,
    pub run: RunRow,
    pub principal: PrincipalId,
    /// The pinned agent configuration, as stored in `agent_versions`.
    pub configuration: Value,
    pub counters: RunCounters,
    pub attempts: u32,
    /// The chat model and reasoning effort the owner's settings held when the run was submitted.
    pub chat_model: Option<(String, String)>,
    /// A scheduled run's requested scopes (`None` for an interactive run): its scoped tools
    /// are limited to these.
    pub scheduled_scopes: Option<Vec<String>>,
    /// How long a scheduled run may wait for the owner (its schedule's setting); `None` for an
    /// interactive run, which waits as long as its agent says.
    pub wait_timeout_seconds: Option<u32>,
    pub kind: RunKind,
}

/// What a run does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RunKind {
    /// The agent loop: the model, its tool calls, the model again.
    Agent,
    /// A frozen draft's one `send_message` call, which the run holds from the start: it is
    /// settled like any call (approval, one dispatch) and the run ends with it, asking no model.
    DraftSend,
}

/// What a claim returns beyond [`RUN_COLUMNS`]: the run's owner, usage and model choice.
#[derive(sqlx::FromRow)]
struct ClaimRecord {
    principal_id: String,
    attempts: i32,
    steps: i32,
    model_calls: i32,
    tool_calls: i32,
    cost_micros: i64,
    input_tokens: i64,
    output_tokens: i64,
    chat_model: Option<String>,
    chat_reasoning_effort: Option<String>,
    occurrence_id: Option<Uuid>,
    requested_scopes: Vec<String>,
    wait_timeout_seconds: Option<i32>,
    kind: String,
}

/// The session of an invocation found stranded (beside its [`INVOCATION_COLUMNS`]).
#[derive(sqlx::FromRow)]
struct Stranded {
    session_id: Uuid,
}

/// One tool call the model asked for.
#[derive(Debug)]
pub struct NewCall<'a> {
    pub call_id: &'a str,
    pub tool: &'a str,
    pub arguments: &'a Value,
}

/// What one model call produced and used.
#[derive(Debug)]
pub struct ModelStep<'a> {
    pub text: &'a str,
    pub calls: Vec<NewCall<'a>>,
    pub input_tokens: i64,
    pub output_tokens: i64,
    pub cost: Cost,
}

/// Holds the run for this lease, or `None` when the lease is lost or the run's working time ran
/// out at `now` (the sweep cancels it; nothing more is recorded for it, and it never parks with
/// a fresh wait).
async fn hold(conn: &mut PgConnection, lease: &Lease, now: jiff_sqlx::Timestamp) -> Result<bool> {
    Ok(sqlx::query(
        "SELECT 1 FROM runs WHERE id = $1 AND lease_owner = $2 AND state = 'running' AND deadline_at > $3 FOR UPDATE",
    )
    .bind(lease.run.as_uuid())
    .bind(&lease.worker)
    .bind(now)
    .fetch_optional(&mut *conn)
    .await?
    .is_some())
}

fn lost<T>() -> Result<Option<T>> {
    Ok(None)
}

/// What became of [`Store::begin_dispatch`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Dispatch {
    /// `dispatching` is committed: the call may be made, once.
    Started,
    /// The lease or the call's state moved on; nothing changed.
    Lost,
    /// The call is marked approved, but no approval of exactly it (its tool and the arguments
    /// it displayed) was resolved `APPROVED`, or its stored tool or arguments differ from the
    /// ones about to be run: a forged state. Nothing changed; the call must not be made.
    Unapproved,
}

/// Whether an approval resolved `APPROVED` exists for exactly `invocation`: the call's stored
/// tool and arguments are the ones about to be run (locked until the transaction ends), and
/// the approval names that tool and displayed exactly those arguments (cut strings through
/// their digests, [`domain::approval::display_arguments`]).
async fn approved_exactly(tx: &mut PgConnection, lease: &Lease, invocation: &InvocationRow) -> Result<bool> {
    let stored: Option<(String, Value)> =
        sqlx::query_as("SELECT tool, arguments FROM tool_invocations WHERE id = $1 AND run_id = $2 FOR UPDATE")
            .bind(invocation.id)
            .bind(lease.run.as_uuid())
            .fetch_optional(&mut *tx)
            .await?;
    if stored.as_ref() != Some(&(invocation.tool.clone(), invocation.arguments.clone())) {
        return Ok(false);
    }
    let approval: Option<(String, Value, Value)> = sqlx::query_as(
        "SELECT tool, arguments, argument_digests FROM approvals
         WHERE invocation_id = $1 AND run_id = $2 AND status = 'APPROVED'",
    )
    .bind(invocation.id)
    .bind(lease.run.as_uuid())
    .fetch_optional(&mut *tx)
    .await?;
    let shown = display_arguments(&invocation.arguments);
    Ok(approval.is_some_and(|(tool, arguments, digests)| {
        tool == invocation.tool && arguments == shown.arguments && digests == Value::Object(shown.argument_digests)
    }))
}

impl Store {
    /// Claims the oldest queued run, or a running run whose worker's lease expired, for `worker`.
    pub async fn claim_run(&self, worker: &str, lease_seconds: u32) -> Result<Option<ClaimedRun>> {
        let sql = format!(
            "UPDATE runs r SET state = 'running', lease_owner = $1,
                 lease_expires_at = now() + make_interval(secs => $2), attempts = attempts + 1, updated_at = now()
             WHERE r.id = (
                 SELECT id FROM runs
                 WHERE (state = 'queued' OR (state = 'running' AND lease_expires_at < now())) AND deadline_at > $3
                 ORDER BY created_at LIMIT 1 FOR UPDATE SKIP LOCKED)
             RETURNING {RUN_COLUMNS}, r.principal_id, r.attempts, r.steps, r.model_calls, r.tool_calls,
                 r.cost_micros, r.input_tokens, r.output_tokens, r.chat_model, r.chat_reasoning_effort,
                 r.occurrence_id, r.requested_scopes, r.wait_timeout_seconds, r.kind"
        );
        let Some(row) = sqlx::query(&sql)
            .bind(worker)
            .bind(f64::from(lease_seconds))
            .bind(self.now_sql())
            .fetch_optional(&self.pool)
            .await?
        else {
            return Ok(None);
        };
        let run = RunRow::from_row(&row)?;
        let claim = ClaimRecord::from_row(&row)?;
        let counter = |value: i32, column: &str| -> Result<u32> {
            u32::try_from(value).map_err(|_| StoreError::Corrupt(format!("runs.{column}")))
        };
        let counters = RunCounters {
            steps: counter(claim.steps, "steps")?,
            model_calls: counter(claim.model_calls, "model_calls")?,
            tool_calls: counter(claim.tool_calls, "tool_calls")?,
            cost: Cost::from_micros(claim.cost_micros),
            input_tokens: claim.input_tokens,
            output_tokens: claim.output_tokens,
        };
        let attempts = counter(claim.attempts, "attempts")?;
        let scheduled_scopes = claim.occurrence_id.map(|_| claim.requested_scopes);
        let wait_timeout_seconds = claim
            .wait_timeout_seconds
            .map(|seconds| counter(seconds, "wait_timeout_seconds"))
            .transpose()?;
        let kind = match claim.kind.as_str() {
            "agent" => RunKind::Agent,
            "draft_send" => RunKind::DraftSend,
            other => return Err(StoreError::Corrupt(format!("run kind `{other}`"))),
        };
        let configuration: Value = sqlx::query_scalar(
            "SELECT v.configuration FROM sessions s
             JOIN agent_versions v ON v.agent_id = s.agent_id AND v.version = s.agent_version WHERE s.id = $1",
        )
        .bind(run.session_id.as_uuid())
        .fetch_one(&self.pool)
        .await?;
        let lease = Lease {
            run: run.id,
            session: run.session_id,
            worker: worker.to_owned(),
        };
        Ok(Some(ClaimedRun {
            lease,
            run,
            principal: PrincipalId::from_stored(claim.principal_id),
            configuration,
            counters,
            attempts,
            chat_model: claim.chat_model.zip(claim.chat_reasoning_effort),
            scheduled_scopes,
            wait_timeout_seconds,
            kind,
        }))
    }

    /// Extends the lease; false when it was lost.
    pub async fn renew_lease(&self, lease: &Lease, lease_seconds: u32) -> Result<bool> {
        let renewed = sqlx::query(
            "UPDATE runs SET lease_expires_at = now() + make_interval(secs => $3)
             WHERE id = $1 AND lease_owner = $2 AND state = 'running'",
        )
        .bind(lease.run.as_uuid())
        .bind(&lease.worker)
        .bind(f64::from(lease_seconds))
        .execute(&self.pool)
        .await?;
        Ok(renewed.rows_affected() == 1)
    }

    /// Hands a run back to the queue (a worker shutting down between steps).
    pub async fn release_run(&self, lease: &Lease) -> Result<()> {
        self.transaction(
            async |tx: &mut sqlx::PgConnection| {
                let released = sqlx::query(
                    "UPDATE runs SET state = 'queued', lease_owner = NULL, lease_expires_at = NULL, updated_at = now()
                     WHERE id = $1 AND lease_owner = $2 AND state = 'running'",
                )
                .bind(lease.run.as_uuid())
                .bind(&lease.worker)
                .execute(&mut *tx)
                .await?;
                if released.rows_affected() == 1 {
                    hint(Hint::Run);
                }
                Ok(())
            },
            |_| true,
        )
        .await
    }

    /// Every event of a session, in order (the worker builds the model's context from them).
    pub async fn session_history(&self, session: SessionId) -> Result<Vec<crate::EventRow>> {
        self.events_after_unchecked(session, 0).await
    }

    pub async fn invocations(&self, run: RunId) -> Result<Vec<InvocationRow>> {
        let sql =
            format!("SELECT {INVOCATION_COLUMNS} FROM tool_invocations WHERE run_id = $1 ORDER BY step, position");
        let rows = sqlx::query(&sql).bind(run.as_uuid()).fetch_all(&self.pool).await?;
        rows.iter().map(InvocationRow::from_row).collect()
    }

    /// Records one model call: usage counters, the `assistant.message` event and the queued
    /// invocations of its tool calls, together.
    pub async fn record_model_step(&self, lease: &Lease, step: ModelStep<'_>) -> Result<Option<Vec<InvocationRow>>> {
        let now = self.now_sql();
        self.transaction(
            async |tx: &mut PgConnection| {
                if !hold(tx, lease, now).await? {
                    return lost();
                }
                let number: i32 = sqlx::query_scalar(
                    "UPDATE runs SET steps = steps + 1, model_calls = model_calls + 1,
                         tool_calls = tool_calls + $2, cost_micros = cost_micros + $3,
                         input_tokens = input_tokens + $4, output_tokens = output_tokens + $5, updated_at = now()
                     WHERE id = $1 RETURNING steps",
                )
                .bind(lease.run.as_uuid())
                .bind(i32::try_from(step.calls.len()).unwrap_or(i32::MAX))
                .bind(step.cost.micros())
                .bind(step.input_tokens)
                .bind(step.output_tokens)
                .fetch_one(&mut *tx)
                .await?;
                let event = Event::AssistantMessage(AssistantMessage {
                    run_id: lease.run.as_uuid(),
                    step: number,
                    text: step.text.to_owned(),
                    tool_calls: step
                        .calls
                        .iter()
                        .map(|call| ToolCall {
                            call_id: call.call_id.to_owned(),
                            tool: call.tool.to_owned(),
                            arguments: call.arguments.clone(),
                        })
                        .collect(),
                    usage: StepUsage {
                        input_tokens: step.input_tokens,
                        output_tokens: step.output_tokens,
                        cost: step.cost.to_string(),
                    },
                });
                append(tx, lease.session, Some(lease.run), &event).await?;
                let mut invocations = Vec::with_capacity(step.calls.len());
                for (position, call) in step.calls.iter().enumerate() {
                    let sql = format!(
                        "INSERT INTO tool_invocations (id, run_id, session_id, step, position, call_id, tool,
                         arguments, state)
                         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'queued') RETURNING {INVOCATION_COLUMNS}"
                    );
                    let row = sqlx::query(&sql)
                        .bind(Uuid::now_v7())
                        .bind(lease.run.as_uuid())
                        .bind(lease.session.as_uuid())
                        .bind(number)
                        .bind(i32::try_from(position).unwrap_or(i32::MAX))
                        .bind(call.call_id)
                        .bind(call.tool)
                        .bind(call.arguments)
                        .fetch_one(&mut *tx)
                        .await?;
                    invocations.push(InvocationRow::from_row(&row)?);
                }
                Ok(Some(invocations))
            },
            |outcome| outcome.is_some(),
        )
        .await
    }

    /// Settles an invocation without dispatching it (read-only results, denials, unknown tools,
    /// outcomes found unknown on resume) and records `tool.result`.
    /// A `reconciliation` is recorded with the result (a mail write or send found with no
    /// recorded outcome).
    pub async fn settle_invocation(
        &self,
        lease: &Lease,
        invocation: &InvocationRow,
        state: InvocationState,
        result: &Value,
        code: Option<&str>,
        reconciliation: Option<&NewReconciliation<'_>>,
    ) -> Result<Option<()>> {
        let now = self.now_sql();
        self.transaction(
            async |tx: &mut PgConnection| {
                if !hold(tx, lease, now).await? {
                    return lost();
                }
                let code = mail_code(tx, invocation, state, code, reconciliation).await?;
                write_result(tx, lease.session, invocation, state, result, code).await?;
                // Only a dispatched invocation can have armed a reconciliation; one found
                // dispatching on resume settles here, unknown.
                if state == InvocationState::OutcomeUnknown {
                    crate::mail::open(tx, lease.session, invocation, reconciliation).await?;
                }
                Ok(Some(()))
            },
            |outcome| outcome.is_some(),
        )
        .await
    }

    /// Commits `dispatching` before an approved tool call is made. From here on the invocation
    /// is never dispatched again: if its outcome is not recorded, it becomes `outcome_unknown`.
    /// A mail write or send arms its reconciliation (`effect`) in the same transaction.
    ///
    /// The state `approved` is not trusted on its own (another login could have written it):
    /// the call starts only when an approval resolved `APPROVED` exists for exactly it, the
    /// same tool and the arguments it displayed, and the call's stored tool and arguments are
    /// still the ones about to be run. Otherwise nothing changes and [`Dispatch::Unapproved`]
    /// says so.
    pub async fn begin_dispatch(
        &self,
        lease: &Lease,
        invocation: &InvocationRow,
        effect: Option<&NewReconciliation<'_>>,
    ) -> Result<Dispatch> {
        let now = self.now_sql();
        self.transaction(
            async |tx: &mut PgConnection| {
                if !hold(tx, lease, now).await? {
                    return Ok(Dispatch::Lost);
                }
                if !approved_exactly(tx, lease, invocation).await? {
                    return Ok(Dispatch::Unapproved);
                }
                let started = sqlx::query(
                    "UPDATE tool_invocations SET state = 'dispatching', updated_at = now()
                     WHERE id = $1 AND state = 'approved'",
                )
                .bind(invocation.id)
                .execute(&mut *tx)
                .await?;
                if started.rows_affected() != 1 {
                    return Ok(Dispatch::Lost);
                }
                if let Some(effect) = effect {
                    crate::mail::arm(tx, lease.session, invocation, effect).await?;
                }
                let event = Event::ToolStarted(ToolStarted {
                    run_id: lease.run.as_uuid(),
                    invocation_id: invocation.id,
                    call_id: invocation.call_id.clone(),
                    tool: invocation.tool.clone(),
                });
                append(tx, lease.session, Some(lease.run), &event).await?;
                Ok(Dispatch::Started)
            },
            |outcome| *outcome == Dispatch::Started,
        )
        .await
    }

    /// Records the outcome of a dispatched invocation, whatever became of the run meanwhile; only
    /// the first outcome counts. A `reconciliation` (a mail write or send of unknown outcome) is
    /// recorded with it.
    pub async fn finish_dispatch(
        &self,
        session: SessionId,
        invocation: &InvocationRow,
        state: InvocationState,
        result: &Value,
        code: Option<&str>,
        reconciliation: Option<&NewReconciliation<'_>>,
    ) -> Result<bool> {
        self.transaction(
            async |tx: &mut PgConnection| {
                let dispatching: Option<String> =
                    sqlx::query_scalar("SELECT state FROM tool_invocations WHERE id = $1 FOR UPDATE")
                        .bind(invocation.id)
                        .fetch_optional(&mut *tx)
                        .await?;
                if dispatching.as_deref() != Some("dispatching") {
                    return Ok(false);
                }
                let code = mail_code(tx, invocation, state, code, reconciliation).await?;
                write_result(tx, session, invocation, state, result, code).await?;
                settle_mail(tx, session, invocation, state, reconciliation).await?;
                Ok(true)
            },
            |written| *written,
        )
        .await
    }

    /// Parks the run on an approval: the approval (PENDING), the parked state and the
    /// notification commit together. The run stops counting working time and waits for the
    /// owner at most `wait_seconds`.
    pub async fn park_for_approval(
        &self,
        lease: &Lease,
        invocation: &InvocationRow,
        risk: Risk,
        shown: &DisplayedArguments,
        wait_seconds: u32,
    ) -> Result<Option<Uuid>> {
        let now = self.now_sql();
        self.transaction(
            async |tx: &mut PgConnection| {
                if !hold(tx, lease, now).await? {
                    return lost();
                }
                let approval = Uuid::now_v7();
                sqlx::query(
                    "INSERT INTO approvals (id, run_id, session_id, invocation_id, tool, risk, arguments,
                     argument_digests, status)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'PENDING')",
                )
                .bind(approval)
                .bind(lease.run.as_uuid())
                .bind(lease.session.as_uuid())
                .bind(invocation.id)
                .bind(&invocation.tool)
                .bind(risk.as_str())
                .bind(&shown.arguments)
                .bind(Value::Object(shown.argument_digests.clone()))
                .execute(&mut *tx)
                .await?;
                set_invocation_state(tx, invocation.id, InvocationState::AwaitingApproval).await?;
                park(tx, lease, RunState::WaitingApproval, now, wait_seconds).await?;
                sqlx::query(
                    "INSERT INTO notification_outbox (id, kind, session_id, run_id, approval_id, deliver_after)
                     VALUES ($1, 'approval', $2, $3, $4, $5 + make_interval(secs => $6))",
                )
                .bind(Uuid::now_v7())
                .bind(lease.session.as_uuid())
                .bind(lease.run.as_uuid())
                .bind(approval)
                .bind(now)
                .bind(PUSH_DELAY_SECONDS)
                .execute(&mut *tx)
                .await?;
                let event = Event::ApprovalRequested(ApprovalRequested {
                    run_id: lease.run.as_uuid(),
                    approval_id: approval,
                    invocation_id: invocation.id,
                    tool: invocation.tool.clone(),
                    risk,
                    arguments: shown.arguments.clone(),
                    argument_digests: shown
                        .argument_digests
                        .iter()
                        .filter_map(|(pointer, digest)| Some((pointer.clone(), digest.as_str()?.to_owned())))
                        .collect(),
                    status: ApprovalStatus::Pending,
                });
                append(tx, lease.session, Some(lease.run), &event).await?;
                Ok(Some(approval))
            },
            |outcome| outcome.is_some(),
        )
        .await
    }

    /// Parks the run on a question to the owner, waiting at most `wait_seconds` for the answer.
    pub async fn park_for_question(
        &self,
        lease: &Lease,
        invocation: &InvocationRow,
        text: &str,
        wait_seconds: u32,
    ) -> Result<Option<Uuid>> {
        let now = self.now_sql();
        self.transaction(
            async |tx: &mut PgConnection| {
                if !hold(tx, lease, now).await? {
                    return lost();
                }
                let question = Uuid::now_v7();
                sqlx::query(
                    "INSERT INTO questions (id, run_id, session_id, invocation_id, text, status)
                     VALUES ($1, $2, $3, $4, $5, 'PENDING')",
                )
                .bind(question)
                .bind(lease.run.as_uuid())
                .bind(lease.session.as_uuid())
                .bind(invocation.id)
                .bind(text)
                .execute(&mut *tx)
                .await?;
                set_invocation_state(tx, invocation.id, InvocationState::AwaitingAnswer).await?;
                park(tx, lease, RunState::WaitingInput, now, wait_seconds).await?;
                sqlx::query(
                    "INSERT INTO notification_outbox (id, kind, session_id, run_id, question_id, deliver_after)
                     VALUES ($1, 'question', $2, $3, $4, $5 + make_interval(secs => $6))",
                )
                .bind(Uuid::now_v7())
                .bind(lease.session.as_uuid())
                .bind(lease.run.as_uuid())
                .bind(question)
                .bind(now)
                .bind(PUSH_DELAY_SECONDS)
                .execute(&mut *tx)
                .await?;
                let event = Event::QuestionAsked(QuestionAsked {
                    run_id: lease.run.as_uuid(),
                    question_id: question,
                    text: text.to_owned(),
                });
                append(tx, lease.session, Some(lease.run), &event).await?;
                Ok(Some(question))
            },
            |outcome| outcome.is_some(),
        )
        .await
    }

    /// Ends the run `completed`.
    pub async fn complete_run(&self, lease: &Lease, counters: &RunCounters) -> Result<Option<()>> {
        self.end_held_run(lease, Ending::Completed(usage(counters))).await
    }

    /// Ends the run `failed` with `code`.
    pub async fn fail_run(
        &self,
        lease: &Lease,
        code: &str,
        detail: &str,
        counters: &RunCounters,
    ) -> Result<Option<()>> {
        let ending = Ending::Failed {
            code: code.to_owned(),
            detail: detail.to_owned(),
            usage: usage(counters),
        };
        self.end_held_run(lease, ending).await
    }

    async fn end_held_run(&self, lease: &Lease, ending: Ending) -> Result<Option<()>> {
        let now = self.now_sql();
        self.transaction(
            async |tx: &mut PgConnection| {
                if !hold(tx, lease, now).await? {
                    return lost();
                }
                end_run(tx, lease.run, lease.session, ending, now).await?;
                Ok(Some(()))
            },
            |outcome| outcome.is_some(),
        )
        .await
    }

    /// Settles as `outcome_unknown` up to `limit` invocations left `dispatching` on a finished run
    /// for longer than `older_than_seconds` (far longer than any dispatch takes): their worker
    /// died after the run was cancelled or passed its deadline, and no execution will resume
    /// them. A mail write or send among them opens its reconciliation. Returns how many.
    pub async fn settle_stranded_dispatches(&self, older_than_seconds: u32, limit: u32) -> Result<usize> {
        self.transaction(
            async |tx: &mut PgConnection| {
                let rows = sqlx::query(
                    "SELECT i.id, i.run_id, i.step, i.position, i.call_id, i.tool, i.arguments, i.state, i.result,
                            i.code, i.session_id
                     FROM tool_invocations i JOIN runs r ON r.id = i.run_id
                     WHERE i.state = 'dispatching' AND r.state IN ('completed', 'failed', 'cancelled')
                       AND i.updated_at < now() - make_interval(secs => $1)
                     ORDER BY i.updated_at LIMIT $2 FOR UPDATE OF i SKIP LOCKED",
                )
                .bind(f64::from(older_than_seconds))
                .bind(i64::from(limit))
                .fetch_all(&mut *tx)
                .await?;
                let result =
                    json!({ "error": "the worker stopped while this action was in progress; it was not repeated" });
                // Sessions are locked (event sequences) in one order, so two sweeps cannot deadlock.
                let mut stranded = rows
                    .iter()
                    .map(|row| Ok((Stranded::from_row(row)?.session_id, InvocationRow::from_row(row)?)))
                    .collect::<Result<Vec<_>>>()?;
                stranded.sort_by_key(|(session, _)| *session);
                for (session, invocation) in &stranded {
                    let (session, invocation) = (SessionId::from_uuid(*session), invocation);
                    let state = InvocationState::OutcomeUnknown;
                    let code = mail_code(tx, invocation, state, Some("tool.outcome_unknown"), None).await?;
                    write_result(tx, session, invocation, state, &result, code).await?;
                    crate::mail::open(tx, session, invocation, None).await?;
                }
                Ok(stranded.len())
            },
            |_| true,
        )
        .await
    }

    /// Cancels, with reason `deadline`, up to `limit` active runs whose deadline passed by the
    /// store's clock (out of working time, or waited for the owner too long); pending approvals
    /// and questions expire. Returns how many were cancelled.
    pub async fn expire_overdue_runs(&self, limit: u32) -> Result<usize> {
        let now = self.now_sql();
        self.transaction(
            async |tx: &mut PgConnection| {
                let sql = format!(
                    "SELECT id, session_id FROM runs WHERE state IN ({}) AND deadline_at <= $2
                     ORDER BY deadline_at LIMIT $1 FOR UPDATE SKIP LOCKED",
                    active_states_sql()
                );
                let overdue: Vec<(Uuid, Uuid)> = sqlx::query_as(&sql)
                    .bind(i64::from(limit))
                    .bind(now)
                    .fetch_all(&mut *tx)
                    .await?;
                for (run, session) in &overdue {
                    let (run, session) = (RunId::from_uuid(*run), SessionId::from_uuid(*session));
                    end_run(tx, run, session, Ending::Cancelled(CancelReason::Deadline), now).await?;
                }
                Ok(overdue.len())
            },
            |_| true,
        )
        .await
    }
}

fn usage(counters: &RunCounters) -> RunUsage {
    RunUsage {
        steps: counters.steps,
        model_calls: counters.model_calls,
        tool_calls: counters.tool_calls,
        input_tokens: counters.input_tokens,
        output_tokens: counters.output_tokens,
        cost: counters.cost.to_string(),
    }
}

async fn set_invocation_state(conn: &mut PgConnection, id: Uuid, state: InvocationState) -> Result<()> {
    sqlx::query("UPDATE tool_invocations SET state = $2, updated_at = now() WHERE id = $1")
        .bind(id)
        .bind(state.as_str())
        .execute(&mut *conn)
        .await?;
    Ok(())
}

/// Parks the run in `state` at `now`: the time it worked since it last started counts towards its
/// timeout, and from now it waits for the owner at most `wait_seconds`.
async fn park(
    conn: &mut PgConnection,
    lease: &Lease,
    state: RunState,
    now: jiff_sqlx::Timestamp,
    wait_seconds: u32,
) -> Result<()> {
    sqlx::query(
        "UPDATE runs SET state = $2, lease_owner = NULL, lease_expires_at = NULL, updated_at = now(),
             worked = worked + greatest($3 - coalesce(working_since, $3), interval '0'), working_since = NULL,
             deadline_at = $3 + make_interval(secs => $4)
         WHERE id = $1",
    )
    .bind(lease.run.as_uuid())
    .bind(state.as_str())
    .bind(now)
    .bind(f64::from(wait_seconds))
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Settles an invocation and appends its `tool.result` event.
/// A mail write or send of unknown outcome is `mail.outcome_unknown`, whatever the caller knew:
/// its reconciliation was armed when it was dispatched.
async fn mail_code<'a>(
    conn: &mut PgConnection,
    invocation: &InvocationRow,
    state: InvocationState,
    code: Option<&'a str>,
    reconciliation: Option<&NewReconciliation<'_>>,
) -> Result<Option<&'a str>> {
    let mail = state == InvocationState::OutcomeUnknown
        && (reconciliation.is_some() || crate::mail::armed(conn, invocation.id).await?);
    Ok(if mail { Some(crate::mail::OUTCOME_UNKNOWN) } else { code })
}

/// Opens the reconciliation of a write or send of unknown outcome; disarms it once the outcome is
/// known.
async fn settle_mail(
    conn: &mut PgConnection,
    session: SessionId,
    invocation: &InvocationRow,
    state: InvocationState,
    reconciliation: Option<&NewReconciliation<'_>>,
) -> Result<()> {
    if state == InvocationState::OutcomeUnknown {
        crate::mail::open(conn, session, invocation, reconciliation).await?;
    } else {
        crate::mail::disarm(conn, invocation.id).await?;
    }
    Ok(())
}

//! The worker's side of runs, behind one handle, `store.work()`: claims with leases and the
//! run's history (`claims`), recorded model steps and settled tool calls (`steps`), dispatching,
//! committed before any side effect (`dispatch`), parking for approvals and questions
//! (`parking`), and run endings and sweeps (`ending`). Every transition but the end of a dispatch is guarded by the worker's lease: a
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

use crate::notifications::PUSH_DELAY_SECONDS;

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
    /// The memory model and reasoning effort the owner's settings held when the run was
    /// submitted (`None` for a run submitted before they were kept, or not from a message).
    pub memory_model: Option<(String, String)>,
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
    memory_model: Option<String>,
    memory_reasoning_effort: Option<String>,
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
    /// The tool's risk in the run's roster (`None` for a tool it does not hold).
    pub risk: Option<domain::approval::Risk>,
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

mod browser;
mod claims;
mod dispatch;
mod ending;
mod parking;
mod steps;

pub use browser::{Cover, SessionBrowser};
pub use dispatch::Dispatch;

/// The worker's part of the store (`store.work()`): a view of the same pool and clock.
#[derive(Clone, Copy, Debug)]
pub struct Work<'a> {
    store: &'a Store,
}

impl Store {
    /// The run machinery: claims, leases, steps, dispatches, parking and endings.
    pub fn work(&self) -> Work<'_> {
        Work { store: self }
    }
}

impl std::ops::Deref for Work<'_> {
    type Target = Store;

    /// Its statements run on the store's pool, clock and wake-ups.
    fn deref(&self) -> &Store {
        self.store
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

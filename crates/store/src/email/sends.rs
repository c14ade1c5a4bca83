//! Review & Send (migration 0019): a draft's newest revision frozen into the one `send_message`
//! call of a `draft_send` run, in the draft's own send session (kind `email_send`, outside the
//! session index). The worker parks that call for the owner's approval like any mail send,
//! dispatches it once after approve-once and reconciles an uncertain outcome by reading; the run
//! ends with the call. What became of a freeze is read from its run, call, approval and
//! reconciliation, never stored twice. A later save voids a freeze nobody approved yet
//! ([`void_unapproved`], called under the draft's lock) and is refused once one was approved.

use domain::agent::Agent;
use domain::approval::InvocationState;
use domain::ids::{DraftId, PrincipalId, RunId, SessionId};
use domain::run::{RunLimits, RunState};
use sqlx::PgConnection;
use uuid::Uuid;
use wire::email::SendState;
use wire::event::CancelReason;

use crate::email::Email;
use crate::ending::{Ending, end_run};
use crate::wake::{Hint, hint};
use crate::{Result, StoreError};

/// Longest title a draft's send session gets (from the subject).
const TITLE_MAX_CHARS: usize = 100;

/// The newest freeze of a draft and what became of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DraftSend {
    pub run: RunId,
    pub session: SessionId,
    /// The revision it froze.
    pub revision: i32,
    pub state: SendState,
    /// The approval the worker raised for it, once it did.
    pub approval: Option<Uuid>,
    /// Why it was not sent (`approval.denied`, `draft_changed`, `deadline`, a mail code), or the
    /// code of an uncertain outcome (`mail.outcome_unknown`).
    pub code: Option<String>,
    /// Whether its run has not ended yet (a denied call's run ends when a worker next takes it).
    pub run_active: bool,
}

impl DraftSend {
    /// Whether the draft may change or be frozen again: nothing is on its way, sent, or of
    /// unknown outcome still being looked for.
    pub(crate) fn settled_unsent(&self) -> bool {
        matches!(self.state, SendState::NotSent | SendState::Unconfirmed)
    }
}

/// What the owner froze.
#[derive(Debug)]
pub struct Freeze<'a> {
    pub draft: DraftId,
    /// The revision the owner reviewed: it must still be the newest.
    pub revision: i32,
    pub principal: &'a PrincipalId,
    /// The agent the draft's send session is pinned to (its roster holds `tool`).
    pub agent: &'a Agent,
    /// The draft account's `send_message` tool.
    pub tool: &'a str,
    pub limits: RunLimits,
}

#[derive(sqlx::FromRow)]
struct SendRecord {
    send_run: Uuid,
    session_id: Uuid,
    frozen_revision: i32,
    run_state: String,
    outcome_reason: Option<String>,
    invocation_state: Option<String>,
    invocation_code: Option<String>,
    approval_id: Option<Uuid>,
    reconciliation: Option<String>,
}

impl SendRecord {
    fn into_send(self) -> Result<DraftSend> {
        let corrupt = |what: &str, value: &str| StoreError::Corrupt(format!("{what} `{value}`"));
        let run_state = RunState::parse(&self.run_state).ok_or_else(|| corrupt("run state", &self.run_state))?;
        let invocation = self
            .invocation_state
            .as_deref()
            .map(|state| InvocationState::parse(state).ok_or_else(|| corrupt("invocation state", state)))
            .transpose()?;
        let (state, code) = match (invocation, self.reconciliation.as_deref()) {
            (Some(InvocationState::Succeeded), _) | (Some(InvocationState::OutcomeUnknown), Some("found")) => {
                (SendState::Sent, None)
            }
            (Some(InvocationState::OutcomeUnknown), Some("not_found")) => {
                (SendState::Unconfirmed, self.invocation_code)
            }
            (Some(InvocationState::OutcomeUnknown), _) => (SendState::OutcomeUnknown, self.invocation_code),
            (Some(InvocationState::Approved | InvocationState::Dispatching), _) => (SendState::Sending, None),
            (Some(InvocationState::AwaitingApproval), _) => (SendState::AwaitingApproval, None),
            (Some(InvocationState::Queued), _) if run_state.is_active() => (SendState::Preparing, None),
            (Some(InvocationState::Cancelled) | Some(InvocationState::Queued) | None, _) => {
                (SendState::NotSent, self.outcome_reason)
            }
            (Some(_), _) => (SendState::NotSent, self.invocation_code.or(self.outcome_reason)),
        };
        Ok(DraftSend {
            run: RunId::from_uuid(self.send_run),
            session: SessionId::from_uuid(self.session_id),
            revision: self.frozen_revision,
            state,
            approval: self.approval_id,
            code,
            run_active: run_state.is_active(),
        })
    }
}

/// The newest freeze of `draft` and what became of it, on `conn`; `None` when it was never frozen.
pub(crate) async fn draft_send(conn: &mut PgConnection, draft: DraftId) -> Result<Option<DraftSend>> {
    let record: Option<SendRecord> = sqlx::query_as(
        "SELECT d.send_run, d.session_id, d.frozen_revision, r.state AS run_state, r.outcome_reason,
                i.state AS invocation_state, i.code AS invocation_code, a.id AS approval_id, m.state AS reconciliation
         FROM email_drafts d
         JOIN runs r ON r.id = d.send_run
         LEFT JOIN tool_invocations i ON i.run_id = r.id
         LEFT JOIN approvals a ON a.invocation_id = i.id
         LEFT JOIN mail_reconciliations m ON m.invocation_id = i.id
         WHERE d.id = $1",
    )
    .bind(draft.as_uuid())
    .fetch_optional(&mut *conn)
    .await?;
    record.map(SendRecord::into_send).transpose()
}

/// Locks the run of `draft`'s newest freeze (lock order: the draft, then the run, which is what
/// an approval decision and the worker's dispatch lock first) and reads what became of it.
pub(crate) async fn locked_send(conn: &mut PgConnection, draft: DraftId) -> Result<Option<DraftSend>> {
    sqlx::query("SELECT 1 FROM runs WHERE id = (SELECT send_run FROM email_drafts WHERE id = $1) FOR UPDATE")
        .bind(draft.as_uuid())
        .execute(&mut *conn)
        .await?;
    draft_send(conn, draft).await
}

/// Before `draft` (locked by the caller) changes: a freeze still waiting for the owner is voided
/// (its run cancelled `draft_changed`, its approval `CANCELLED`), so no approval can send what
/// the draft no longer says. `Err(send)` when the draft may not change: a freeze was approved
/// and is on its way, was sent, or has an unknown outcome still being looked for.
pub(crate) async fn void_unapproved(
    conn: &mut PgConnection,
    draft: DraftId,
    now: jiff_sqlx::Timestamp,
) -> Result<std::result::Result<(), DraftSend>> {
    let Some(send) = locked_send(conn, draft).await? else {
        return Ok(Ok(()));
    };
    match send.state {
        SendState::Preparing | SendState::AwaitingApproval => {
            void(conn, &send, now).await?;
            Ok(Ok(()))
        }
        _ if send.settled_unsent() => Ok(Ok(())),
        _ => Ok(Err(send)),
    }
}

/// Voids a freeze still waiting for the owner: its run is cancelled `draft_changed` and its
/// approval `CANCELLED`.
pub(crate) async fn void(conn: &mut PgConnection, send: &DraftSend, now: jiff_sqlx::Timestamp) -> Result<()> {
    end_run(
        conn,
        send.run,
        send.session,
        Ending::Cancelled(CancelReason::DraftChanged),
        now,
    )
    .await
}

/// Before a new freeze of a draft (locked by the caller) whose newest freeze is `send`: one
/// waiting for the owner is voided, and one settled unsent whose run has not ended yet (a denied
/// call's run ends when a worker next takes it) is ended now, since a session holds one active
/// run. `Err(send)` when the draft may not be frozen again: its send is on its way, was sent, or
/// is being checked.
pub(crate) async fn clear_for_freeze(
    conn: &mut PgConnection,
    send: DraftSend,
    now: jiff_sqlx::Timestamp,
) -> Result<std::result::Result<(), DraftSend>> {
    match send.state {
        SendState::Preparing | SendState::AwaitingApproval => void(conn, &send, now).await?,
        _ if send.settled_unsent() && send.run_active => void(conn, &send, now).await?,
        _ if send.settled_unsent() => {}
        _ => return Ok(Err(send)),
    }
    Ok(Ok(()))
}

/// The draft's send session, created on its first freeze: pinned to `agent` like any session,
/// but of kind `email_send`, so neither the index nor the folders show it.
async fn send_session(
    conn: &mut PgConnection,
    freeze: &Freeze<'_>,
    existing: Option<Uuid>,
    subject: &str,
) -> Result<SessionId> {
    let configuration = serde_json::to_value(&freeze.agent.configuration)
        .map_err(|error| StoreError::Corrupt(format!("agent configuration: {error}")))?;
    if let Some(existing) = existing {
        // Pinned to the agent as it is now: its roster names the account's send tool today.
        sqlx::query(
            "WITH version AS (
                 INSERT INTO agent_versions (agent_id, version, configuration) VALUES ($2, $3, $4)
                 ON CONFLICT (agent_id, version) DO NOTHING
             )
             UPDATE sessions SET agent_id = $2, agent_version = $3 WHERE id = $1",
        )
        .bind(existing)
        .bind(freeze.agent.configuration.id.as_str())
        .bind(freeze.agent.version.as_str())
        .bind(&configuration)
        .execute(&mut *conn)
        .await?;
        return Ok(SessionId::from_uuid(existing));
    }
    let subject = subject.trim();
    let title = if subject.is_empty() {
        "Email".to_owned()
    } else {
        format!("Email: {}", subject.chars().take(TITLE_MAX_CHARS).collect::<String>())
    };
    let id =
        crate::sessions::insert_session_of_kind(conn, freeze.principal, freeze.agent, &title, "email_send").await?;
    Ok(SessionId::from_uuid(id))
}

/// Freezes `arguments` (a frozen revision's `send_message` call) into a queued `draft_send` run
/// of the draft's send session (made now when `session` is `None`, else pinned again to the
/// freeze's agent, whose roster holds the tool), and points the draft at it. `false` when the
/// session already has an active run (a message the owner sent there): nothing is frozen.
pub(crate) async fn begin_send(
    conn: &mut PgConnection,
    freeze: &Freeze<'_>,
    session: Option<Uuid>,
    subject: &str,
    arguments: &serde_json::Value,
    now: jiff_sqlx::Timestamp,
) -> Result<bool> {
    let session = send_session(conn, freeze, session, subject).await?;
    let run = Uuid::now_v7();
    let limits = freeze.limits;
    let inserted = sqlx::query(
        "INSERT INTO runs (id, session_id, state, principal_id, max_steps, max_model_calls, max_tool_calls,
                           max_cost_micros, run_timeout_seconds, deadline_at, working_since, kind, steps, tool_calls)
         VALUES ($1, $2, 'queued', $3, $4, $5, $6, $7, $8, $9 + make_interval(secs => $8), $9, 'draft_send', 1, 1)
         ON CONFLICT (session_id) WHERE state IN ('queued', 'running', 'waiting_approval', 'waiting_input') DO NOTHING",
    )
    .bind(run)
    .bind(session.as_uuid())
    .bind(freeze.principal.as_str())
    .bind(i32::try_from(limits.max_steps).unwrap_or(i32::MAX))
    .bind(i32::try_from(limits.max_model_calls).unwrap_or(i32::MAX))
    .bind(i32::try_from(limits.max_tool_calls).unwrap_or(i32::MAX))
    .bind(limits.max_cost.micros())
    .bind(i32::try_from(limits.run_timeout_seconds).unwrap_or(i32::MAX))
    .bind(now)
    .execute(&mut *conn)
    .await?
    .rows_affected();
    if inserted == 0 {
        return Ok(false);
    }
    sqlx::query(
        // Queued by the column default: the api login may not name a call's state.
        "INSERT INTO tool_invocations (id, run_id, session_id, step, position, call_id, tool, arguments)
         VALUES ($1, $2, $3, 1, 0, $4, $5, $6)",
    )
    .bind(Uuid::now_v7())
    .bind(run)
    .bind(session.as_uuid())
    .bind(format!("draft-{}-{}", freeze.draft.as_uuid().simple(), freeze.revision))
    .bind(freeze.tool)
    .bind(arguments)
    .execute(&mut *conn)
    .await?;
    sqlx::query("UPDATE email_drafts SET session_id = $2, send_run = $3, frozen_revision = $4 WHERE id = $1")
        .bind(freeze.draft.as_uuid())
        .bind(session.as_uuid())
        .bind(run)
        .bind(freeze.revision)
        .execute(&mut *conn)
        .await?;
    hint(Hint::Run);
    Ok(true)
}

impl Email<'_> {
    /// The draft whose send session `session` is; `None` for a conversation.
    pub async fn send_session_draft(self, session: SessionId) -> Result<Option<DraftId>> {
        let id: Option<Uuid> = sqlx::query_scalar("SELECT id FROM email_drafts WHERE session_id = $1")
            .bind(session.as_uuid())
            .fetch_optional(&self.pool)
            .await?;
        Ok(id.map(DraftId::from))
    }

    /// What became of `draft`'s newest freeze; `None` when it was never frozen.
    pub async fn draft_send(self, draft: DraftId) -> Result<Option<DraftSend>> {
        let mut conn = self.pool.acquire().await?;
        draft_send(&mut conn, draft).await
    }
}

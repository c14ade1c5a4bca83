//! Runs: message submit (idempotent, one active run per session), point reads and cancel.

use domain::ids::{ArtifactId, PrincipalId, RunId, SessionId};
use domain::run::{Cost, RunLimits, RunState};
use jiff::Timestamp;
use sqlx::FromRow;
use sqlx::postgres::PgRow;
use uuid::Uuid;
use wire::event::{Attachment, CancelReason, Event, UserMessage, UserMessageCreated};

use crate::ending::{Ending, end_run};
use crate::events::{Touch, append_touching};
use crate::idempotency::{self, IdempotencyClaim, Prior, StoredResponse};
use crate::{Result, Store, StoreError, timestamp};

#[derive(Clone, Debug, PartialEq)]
pub struct RunRow {
    pub id: RunId,
    pub session_id: SessionId,
    pub state: RunState,
    pub limits: RunLimits,
    pub message_seq: Option<i64>,
    pub deadline_at: Timestamp,
    pub outcome_reason: Option<String>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub finished_at: Option<Timestamp>,
}

pub(crate) const RUN_COLUMNS: &str = "r.id, r.session_id, r.state, r.max_steps, r.max_model_calls, r.max_tool_calls,
    r.max_cost_micros, r.run_timeout_seconds, r.message_seq, r.deadline_at, r.outcome_reason, r.created_at,
    r.updated_at, r.finished_at";

/// The [`RUN_COLUMNS`] of a `runs` row as stored (a row may carry more columns).
#[derive(sqlx::FromRow)]
struct RunRecord {
    id: Uuid,
    session_id: Uuid,
    state: String,
    max_steps: i32,
    max_model_calls: i32,
    max_tool_calls: i32,
    max_cost_micros: i64,
    run_timeout_seconds: i32,
    message_seq: Option<i64>,
    deadline_at: jiff_sqlx::Timestamp,
    outcome_reason: Option<String>,
    created_at: jiff_sqlx::Timestamp,
    updated_at: jiff_sqlx::Timestamp,
    finished_at: Option<jiff_sqlx::Timestamp>,
}

fn count(value: i32, column: &str) -> Result<u32> {
    u32::try_from(value).map_err(|_| StoreError::Corrupt(format!("runs.{column} is negative")))
}

impl RunRow {
    pub(crate) fn from_row(row: &PgRow) -> Result<RunRow> {
        let record = RunRecord::from_row(row)?;
        Ok(RunRow {
            id: RunId::from_uuid(record.id),
            session_id: SessionId::from_uuid(record.session_id),
            state: RunState::parse(&record.state)
                .ok_or_else(|| StoreError::Corrupt(format!("run state `{}`", record.state)))?,
            limits: RunLimits {
                max_steps: count(record.max_steps, "max_steps")?,
                max_model_calls: count(record.max_model_calls, "max_model_calls")?,
                max_tool_calls: count(record.max_tool_calls, "max_tool_calls")?,
                max_cost: Cost::from_micros(record.max_cost_micros),
                run_timeout_seconds: count(record.run_timeout_seconds, "run_timeout_seconds")?,
            },
            message_seq: record.message_seq,
            deadline_at: timestamp(record.deadline_at),
            outcome_reason: record.outcome_reason,
            created_at: timestamp(record.created_at),
            updated_at: timestamp(record.updated_at),
            finished_at: record.finished_at.map(timestamp),
        })
    }
}

/// An artifact named by a message, as stored.
#[derive(sqlx::FromRow)]
struct AttachedArtifact {
    id: Uuid,
    filename: String,
    media_type: String,
    size_bytes: i64,
}

/// A user message to submit.
#[derive(Debug)]
pub struct NewMessage<'a> {
    pub principal: &'a PrincipalId,
    pub session: SessionId,
    pub text: Option<&'a str>,
    pub attachments: &'a [ArtifactId],
    pub limits: RunLimits,
    /// The session's title if it has none yet.
    pub title: Option<String>,
    /// The chat model and reasoning effort in force (the owner's effective model settings).
    pub chat_model: (&'a str, &'a str),
    pub idempotency: IdempotencyClaim<'a>,
}

/// What became of a submit.
#[derive(Debug, PartialEq)]
pub enum Submit {
    /// The message, its run and the idempotency record committed together.
    Accepted {
        run: Box<RunRow>,
        response: StoredResponse,
    },
    /// The key was used before: the original response, a reuse, or a request in flight.
    Earlier(Prior),
    SessionNotFound,
    UnknownArtifact(ArtifactId),
    /// The session already has this active run.
    ActiveRun(RunId),
}

/// The outcome of cancelling a run.
#[derive(Debug, PartialEq)]
pub enum CancelRun {
    Cancelled(Box<RunRow>),
    /// The run had already ended.
    NotActive(Box<RunRow>),
    NotFound,
}

/// Whether the submit's session exists for its principal (read on the failure paths only).
async fn session_exists(conn: &mut sqlx::PgConnection, new: &NewMessage<'_>) -> Result<bool> {
    Ok(
        sqlx::query("SELECT 1 FROM sessions WHERE id = $1 AND principal_id = $2")
            .bind(new.session.as_uuid())
            .bind(new.principal.as_str())
            .fetch_optional(&mut *conn)
            .await?
            .is_some(),
    )
}

/// The active run states as an SQL list, the same predicate as `runs_one_active_per_session`.
pub(crate) fn active_states_sql() -> String {
    RunState::ALL
        .into_iter()
        .filter(|state| state.is_active())
        .map(|state| format!("'{}'", state.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

impl Store {
    /// Submits a user message: the `user.message.created` event, the queued run and the
    /// idempotency record (holding the response `render` builds) commit in one transaction.
    pub async fn submit_message(
        &self,
        new: NewMessage<'_>,
        render: impl Fn(&RunRow, i64) -> Result<StoredResponse>,
    ) -> Result<Submit> {
        loop {
            if let Some(outcome) = self.try_submit(&new, &render).await? {
                return Ok(outcome);
            }
            // Lost to an active run: name it. If it ended meanwhile, try again.
            if let Some(run) = self.active_run(new.session).await? {
                return Ok(Submit::ActiveRun(run));
            }
        }
    }

    /// One attempt; `None` when another active run holds the session.
    async fn try_submit(
        &self,
        new: &NewMessage<'_>,
        render: &impl Fn(&RunRow, i64) -> Result<StoredResponse>,
    ) -> Result<Option<Submit>> {
        let now = self.now_sql();
        self.transaction(
            async |tx: &mut sqlx::PgConnection| {
                if let Some(prior) = idempotency::check(tx, new.principal, &new.idempotency).await? {
                    return Ok(Some(Submit::Earlier(prior)));
                }

                let mut attachments = Vec::with_capacity(new.attachments.len());
                if !new.attachments.is_empty() {
                    let ids: Vec<Uuid> = new.attachments.iter().map(|id| id.as_uuid()).collect();
                    let found: Vec<AttachedArtifact> = sqlx::query_as(
                        "SELECT a.id, a.filename, a.media_type, a.size_bytes FROM artifacts a JOIN sessions s ON
                     s.id = a.session_id
                     WHERE a.session_id = $1 AND s.principal_id = $2 AND a.id = ANY($3)",
                    )
                    .bind(new.session.as_uuid())
                    .bind(new.principal.as_str())
                    .bind(&ids)
                    .fetch_all(&mut *tx)
                    .await?;
                    for id in new.attachments {
                        let Some(row) = found.iter().find(|row| row.id == id.as_uuid()) else {
                            return Ok(Some(if session_exists(tx, new).await? {
                                Submit::UnknownArtifact(*id)
                            } else {
                                Submit::SessionNotFound
                            }));
                        };
                        attachments.push(Attachment {
                            artifact_id: id.as_uuid(),
                            filename: row.filename.clone(),
                            media_type: row.media_type.clone(),
                            size_bytes: row.size_bytes,
                        });
                    }
                }

                // The partial unique index decides which of several concurrent submits gets the run;
                // the winner wakes the workers. No session lock is taken before this insert: it may
                // wait for a run being ended, and that transaction locks the session last (lock
                // order: run, then session).
                let insert = format!(
                    "WITH r AS (
                     INSERT INTO runs (id, session_id, state, principal_id, max_steps, max_model_calls,
                                       max_tool_calls, max_cost_micros, run_timeout_seconds, deadline_at,
                                       chat_model, chat_reasoning_effort, working_since)
                     SELECT $1, $2, 'queued', $3, $4, $5, $6, $7, $8, $12 + make_interval(secs => $8), $10, $11, $12
                     WHERE EXISTS (SELECT 1 FROM sessions WHERE id = $2 AND principal_id = $3)
                     ON CONFLICT (session_id) WHERE state IN ({}) DO NOTHING
                     RETURNING *
                 )
                 SELECT {RUN_COLUMNS} FROM r, LATERAL (SELECT pg_notify($9, r.id::text)) AS wake",
                    active_states_sql()
                );
                let limits = new.limits;
                let signed = |value: u32| i32::try_from(value).unwrap_or(i32::MAX);
                let inserted = sqlx::query(&insert)
                    .bind(Uuid::now_v7())
                    .bind(new.session.as_uuid())
                    .bind(new.principal.as_str())
                    .bind(signed(limits.max_steps))
                    .bind(signed(limits.max_model_calls))
                    .bind(signed(limits.max_tool_calls))
                    .bind(limits.max_cost.micros())
                    .bind(signed(limits.run_timeout_seconds))
                    .bind(crate::wake::RUNS_CHANNEL)
                    .bind(new.chat_model.0)
                    .bind(new.chat_model.1)
                    .bind(now)
                    .fetch_optional(&mut *tx)
                    .await?;
                let Some(row) = inserted else {
                    return Ok(if session_exists(tx, new).await? {
                        None
                    } else {
                        Some(Submit::SessionNotFound)
                    });
                };
                let mut row = RunRow::from_row(&row)?;
                let run = row.id;

                let event = Event::UserMessageCreated(UserMessageCreated {
                    run_id: run.as_uuid(),
                    message: UserMessage {
                        text: new.text.map(str::to_owned),
                        attachments,
                    },
                    schedule: None,
                });
                let touch = Touch {
                    title: new.title.as_deref(),
                };
                let seq = append_touching(&mut *tx, new.session, Some(run), &event, Some(touch)).await?;
                row.message_seq = Some(seq);

                sqlx::query("UPDATE runs SET message_seq = $2 WHERE id = $1")
                    .bind(run.as_uuid())
                    .bind(seq)
                    .execute(&mut *tx)
                    .await?;
                let response = render(&row, seq)?;
                idempotency::record(tx, new.principal, &new.idempotency, &response).await?;
                Ok(Some(Submit::Accepted {
                    run: Box::new(row),
                    response,
                }))
            },
            |outcome| matches!(outcome, Some(Submit::Accepted { .. })),
        )
        .await
    }

    /// The session's active run, if any.
    pub async fn active_run(&self, session: SessionId) -> Result<Option<RunId>> {
        let sql = format!(
            "SELECT id FROM runs WHERE session_id = $1 AND state IN ({})",
            active_states_sql()
        );
        let id: Option<Uuid> = sqlx::query_scalar(&sql)
            .bind(session.as_uuid())
            .fetch_optional(&self.pool)
            .await?;
        Ok(id.map(RunId::from_uuid))
    }

    pub async fn run(&self, principal: &PrincipalId, id: RunId) -> Result<Option<RunRow>> {
        let sql = format!("SELECT {RUN_COLUMNS} FROM runs r WHERE r.id = $1 AND r.principal_id = $2");
        let row = sqlx::query(&sql)
            .bind(id.as_uuid())
            .bind(principal.as_str())
            .fetch_optional(&self.pool)
            .await?;
        row.as_ref().map(RunRow::from_row).transpose()
    }

    /// Ends an active run `cancelled` with reason `requested` and records `run.cancelled`.
    pub async fn cancel_run(&self, principal: &PrincipalId, id: RunId) -> Result<CancelRun> {
        let now = self.now_sql();
        self.transaction(
            async |tx: &mut sqlx::PgConnection| {
                let sql =
                    format!("SELECT {RUN_COLUMNS} FROM runs r WHERE r.id = $1 AND r.principal_id = $2 FOR UPDATE");
                let found = sqlx::query(&sql)
                    .bind(id.as_uuid())
                    .bind(principal.as_str())
                    .fetch_optional(&mut *tx)
                    .await?;
                let Some(row) = found else {
                    return Ok(CancelRun::NotFound);
                };
                let row = RunRow::from_row(&row)?;
                if !row.state.is_active() {
                    return Ok(CancelRun::NotActive(Box::new(row)));
                }
                // A worker executing the run loses its lease here and stops at its next step.
                end_run(tx, id, row.session_id, Ending::Cancelled(CancelReason::Requested), now).await?;
                let sql = format!("SELECT {RUN_COLUMNS} FROM runs r WHERE r.id = $1");
                let updated = sqlx::query(&sql).bind(id.as_uuid()).fetch_one(&mut *tx).await?;
                Ok(CancelRun::Cancelled(Box::new(RunRow::from_row(&updated)?)))
            },
            |outcome| matches!(outcome, CancelRun::Cancelled(_)),
        )
        .await
    }
}

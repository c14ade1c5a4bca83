//! Runs: message submit (idempotent, one active run per session), point reads and cancel.

use domain::ids::{ArtifactId, PrincipalId, RunId, SessionId};
use domain::models::{Offered, OfferedModel};
use domain::run::{Cost, RunLimits, RunState};
use jiff::Timestamp;
use sqlx::FromRow;
use sqlx::postgres::PgRow;
use uuid::Uuid;
use wire::event::{CancelReason, Event, UserMessage, UserMessageCreated};

use crate::ending::{Ending, end_run};
use crate::idempotency::{IdempotencyClaim, Prior, StoredResponse};
use crate::wake::Hint;
use crate::{Result, Store, StoreError, parsed, timestamp};

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
            state: parsed("run state", &record.state, RunState::parse)?,
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

/// What the `submit_message` function answered.
#[derive(sqlx::FromRow)]
struct SubmitRecord {
    o_outcome: String,
    o_run: Option<Uuid>,
    o_artifact: Option<Uuid>,
    o_seq: Option<i64>,
    o_status: Option<i32>,
    o_body: Option<Vec<u8>>,
}

impl SubmitRecord {
    fn into_submit(self, mut run: RunRow) -> Result<Submit> {
        let SubmitRecord {
            o_outcome: outcome,
            o_run,
            o_artifact,
            o_seq,
            o_status,
            o_body,
        } = self;
        let missing = |what: &str| StoreError::Corrupt(format!("submit `{outcome}` without {what}"));
        let response = || -> Result<StoredResponse> {
            let (Some(status), Some(body)) = (o_status, o_body) else {
                return Err(missing("a response"));
            };
            let status = u16::try_from(status).map_err(|_| StoreError::Corrupt("stored response status".into()))?;
            Ok(StoredResponse { status, body })
        };
        Ok(match outcome.as_str() {
            "accepted" => {
                run.message_seq = Some(o_seq.ok_or_else(|| missing("a sequence"))?);
                Submit::Accepted {
                    response: response()?,
                    run: Box::new(run),
                }
            }
            "replay" => Submit::Earlier(Prior::Replay(response()?)),
            "key_reused" => Submit::Earlier(Prior::KeyReused),
            "key_in_flight" => Submit::Earlier(Prior::KeyInFlight),
            "session_not_found" => Submit::SessionNotFound,
            "unknown_artifact" => {
                Submit::UnknownArtifact(ArtifactId::from_uuid(o_artifact.ok_or_else(|| missing("an artifact"))?))
            }
            "active_run" => Submit::ActiveRun(RunId::from_uuid(o_run.ok_or_else(|| missing("a run"))?)),
            other => return Err(StoreError::Corrupt(format!("submit outcome `{other}`"))),
        })
    }
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
    /// The models the server offers: the run takes the owner's model settings while the offer
    /// includes them, else the offer's default ([`Offered::effective`], applied in the database
    /// in the same round trip).
    pub models: &'a Offered,
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

/// The active run states as an SQL list, the same predicate as `runs_one_active_per_session`.
pub(crate) fn active_states_sql() -> String {
    RunState::ALL
        .into_iter()
        .filter(|state| state.is_active())
        .map(|state| format!("'{}'", state.as_str()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// An offer as parallel arrays of (model, effort), one pair per offered combination.
fn offered_pairs(models: &[OfferedModel]) -> (Vec<&str>, Vec<&str>) {
    models
        .iter()
        .flat_map(|m| {
            m.reasoning_efforts
                .iter()
                .map(|effort| (m.model.as_str(), effort.as_str()))
        })
        .unzip()
}

impl Store {
    /// Submits a user message: the `user.message.created` event, the queued run and the
    /// idempotency record (holding the response `render` builds) commit together, in one round
    /// trip (the `submit_message` function of migration 0015, taking the memory model since 0032
    /// and reading the owner's model settings itself since 0039).
    ///
    /// `render` is given the run as it will be stored, with its message sequence still unknown
    /// (`i64::MAX`): that number must appear exactly once in the rendered body, and the
    /// function writes the real sequence in its place.
    pub async fn submit_message(
        &self,
        new: NewMessage<'_>,
        render: impl Fn(&RunRow) -> Result<StoredResponse>,
    ) -> Result<Submit> {
        // The database keeps microseconds: the response shows what a later read will.
        let now = Timestamp::from_microsecond(self.now().as_microsecond())
            .map_err(|error| StoreError::Corrupt(format!("the clock: {error}")))?;
        let limits = new.limits;
        let deadline = now
            .checked_add(jiff::SignedDuration::from_secs(i64::from(limits.run_timeout_seconds)))
            .map_err(|error| StoreError::Corrupt(format!("the run deadline: {error}")))?;
        let run = RunRow {
            id: RunId::from_uuid(Uuid::now_v7()),
            session_id: new.session,
            state: RunState::Queued,
            limits,
            message_seq: Some(i64::MAX),
            deadline_at: deadline,
            outcome_reason: None,
            created_at: now,
            updated_at: now,
            finished_at: None,
        };
        let response = render(&run)?;
        let marker = i64::MAX.to_string();
        let body = String::from_utf8(response.body)
            .map_err(|_| StoreError::Corrupt("a submit response is not UTF-8".into()))?;
        let mut parts = body.split(marker.as_str());
        let (Some(head), Some(tail), None) = (parts.next(), parts.next(), parts.next()) else {
            return Err(StoreError::Corrupt(
                "a submit response must show its message sequence exactly once".into(),
            ));
        };
        let event = Event::UserMessageCreated(UserMessageCreated {
            run_id: run.id.as_uuid(),
            message: UserMessage {
                text: new.text.map(str::to_owned),
                // Filled in from the stored artifacts by the function.
                attachments: Vec::new(),
            },
            schedule: None,
        });
        let (kind, payload) = event
            .to_stored()
            .map_err(|error| StoreError::Corrupt(format!("event `{}` is not serializable: {error}", event.kind())))?;
        let attachments: Vec<Uuid> = new.attachments.iter().map(|id| id.as_uuid()).collect();
        let default = new.models.default_choice();
        let (chat_models, chat_efforts) = offered_pairs(&new.models.chat);
        let (memory_models, memory_efforts) = offered_pairs(&new.models.memory);
        let submit = sqlx::query_as(
            "SELECT * FROM submit_message($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15,
                                          $16, $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27)",
        )
        .bind(run.id.as_uuid())
        .bind(new.session.as_uuid())
        .bind(new.principal.as_str())
        .bind(new.idempotency.key.as_str())
        .bind(new.idempotency.operation)
        .bind(new.idempotency.request_hash)
        .bind(&attachments);
        let outcome: SubmitRecord = bind_limits!(submit, &limits)
            .bind(jiff_sqlx::Timestamp::from(now))
            .bind(&default.chat_model)
            .bind(&default.chat_reasoning_effort)
            .bind(&default.memory_model)
            .bind(&default.memory_reasoning_effort)
            .bind(&chat_models)
            .bind(&chat_efforts)
            .bind(&memory_models)
            .bind(&memory_efforts)
            .bind(kind)
            .bind(&payload)
            .bind(new.title.as_deref())
            .bind(i32::from(response.status))
            .bind(head.as_bytes())
            .bind(tail.as_bytes())
            .fetch_one(&self.pool)
            .await?;
        let submitted = outcome.into_submit(run)?;
        if let Submit::Accepted { run, .. } = &submitted {
            let seq = run.message_seq.unwrap_or_default();
            self.wakes
                .publish(&self.pool, vec![Hint::Run, Hint::Event(new.session, seq)]);
        }
        Ok(submitted)
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
        let row = crate::owned_row(&self.pool, &sql, id.as_uuid(), principal).await?;
        row.as_ref().map(RunRow::from_row).transpose()
    }

    /// Ends an active run `cancelled` with reason `requested` and records `run.cancelled`.
    pub async fn cancel_run(&self, principal: &PrincipalId, id: RunId) -> Result<CancelRun> {
        let now = self.now_sql();
        self.transaction(
            async |tx: &mut sqlx::PgConnection| {
                let sql =
                    format!("SELECT {RUN_COLUMNS} FROM runs r WHERE r.id = $1 AND r.principal_id = $2 FOR UPDATE");
                let found = crate::owned_row(&mut *tx, &sql, id.as_uuid(), principal).await?;
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_submit_function_names_the_active_states_of_the_one_active_run_index() {
        for migration in [
            include_str!("../../../migrations/0015_submit_in_one_statement.sql"),
            include_str!("../../../migrations/0032_memory_model_on_runs.sql"),
        ] {
            let predicate = format!("state IN ({})", super::active_states_sql());
            assert_eq!(migration.matches(&predicate).count(), 2, "{predicate}");
            assert_eq!(migration.matches("state IN (").count(), 2);
        }
    }
}

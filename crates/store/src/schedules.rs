//! Schedules: idempotent creation pinned to an agent version, reads, occurrences, and cancel
//! with an expected revision.

use domain::ids::{PrincipalId, RunId, ScheduleId, SessionId};
use domain::run::{Cost, RunLimits};
use jiff::Timestamp;
use sqlx::postgres::PgRow;
use sqlx::{FromRow, PgConnection};
use uuid::Uuid;
use wire::response::{OccurrenceState, ScheduleState};

use crate::idempotency::{self, IdempotencyClaim, Prior, StoredResponse};
use crate::{Result, Store, StoreError, parsed, signed, timestamp};

#[derive(Clone, Debug, PartialEq)]
pub struct ScheduleRow {
    pub id: ScheduleId,
    pub revision: i32,
    pub title: String,
    pub instruction: String,
    pub agent_id: String,
    pub agent_version: String,
    pub policy_profile: String,
    pub requested_scopes: Vec<String>,
    pub limits: RunLimits,
    /// How long each run may wait for the owner (an approval or a question) before it expires.
    pub wait_timeout_seconds: u32,
    pub local_time: String,
    pub timezone: String,
    pub misfire_grace_seconds: i32,
    pub max_consecutive_failures: i32,
    pub state: ScheduleState,
    pub consecutive_failures: i32,
    pub next_fire_at: Option<Timestamp>,
    pub created_at: Timestamp,
    pub updated_at: Timestamp,
    pub cancelled_at: Option<Timestamp>,
}

const SCHEDULE_COLUMNS: &str = "id, revision, title, instruction, agent_id, agent_version, policy_profile,
    requested_scopes, max_steps, max_model_calls, max_tool_calls, max_cost_micros, run_timeout_seconds,
    wait_timeout_seconds, local_time, timezone, misfire_grace_seconds, max_consecutive_failures, state, consecutive_failures, next_fire_at, created_at,
    updated_at, cancelled_at";

/// The columns of a `schedules` row that define what each firing runs, as stored.
#[derive(sqlx::FromRow)]
pub(crate) struct DefinitionRecord {
    pub(crate) title: String,
    pub(crate) instruction: String,
    pub(crate) agent_id: String,
    pub(crate) agent_version: String,
    pub(crate) requested_scopes: Vec<String>,
    pub(crate) max_steps: i32,
    pub(crate) max_model_calls: i32,
    pub(crate) max_tool_calls: i32,
    pub(crate) max_cost_micros: i64,
    pub(crate) run_timeout_seconds: i32,
    pub(crate) wait_timeout_seconds: i32,
    pub(crate) local_time: String,
    pub(crate) timezone: String,
    pub(crate) misfire_grace_seconds: i32,
}

/// A `schedules` row as stored, read by column name.
#[derive(sqlx::FromRow)]
struct ScheduleRecord {
    id: Uuid,
    revision: i32,
    #[sqlx(flatten)]
    definition: DefinitionRecord,
    policy_profile: String,
    max_consecutive_failures: i32,
    state: String,
    consecutive_failures: i32,
    next_fire_at: Option<jiff_sqlx::Timestamp>,
    created_at: jiff_sqlx::Timestamp,
    updated_at: jiff_sqlx::Timestamp,
    cancelled_at: Option<jiff_sqlx::Timestamp>,
}

fn positive(value: i32, column: &str) -> Result<u32> {
    u32::try_from(value).map_err(|_| StoreError::Corrupt(format!("schedules.{column}")))
}

impl ScheduleRow {
    fn from_row(row: &PgRow) -> Result<ScheduleRow> {
        let record = ScheduleRecord::from_row(row)?;
        Ok(ScheduleRow {
            id: ScheduleId::from_uuid(record.id),
            revision: record.revision,
            title: record.definition.title,
            instruction: record.definition.instruction,
            agent_id: record.definition.agent_id,
            agent_version: record.definition.agent_version,
            policy_profile: record.policy_profile,
            requested_scopes: record.definition.requested_scopes,
            limits: RunLimits {
                max_steps: positive(record.definition.max_steps, "max_steps")?,
                max_model_calls: positive(record.definition.max_model_calls, "max_model_calls")?,
                max_tool_calls: positive(record.definition.max_tool_calls, "max_tool_calls")?,
                max_cost: Cost::from_micros(record.definition.max_cost_micros),
                run_timeout_seconds: positive(record.definition.run_timeout_seconds, "run_timeout_seconds")?,
            },
            wait_timeout_seconds: positive(record.definition.wait_timeout_seconds, "wait_timeout_seconds")?,
            local_time: record.definition.local_time,
            timezone: record.definition.timezone,
            misfire_grace_seconds: record.definition.misfire_grace_seconds,
            max_consecutive_failures: record.max_consecutive_failures,
            state: parsed("schedule state", &record.state, ScheduleState::parse)?,
            consecutive_failures: record.consecutive_failures,
            next_fire_at: record.next_fire_at.map(timestamp),
            created_at: timestamp(record.created_at),
            updated_at: timestamp(record.updated_at),
            cancelled_at: record.cancelled_at.map(timestamp),
        })
    }
}

#[derive(Clone, Debug, PartialEq)]
pub struct OccurrenceRow {
    pub id: Uuid,
    pub schedule_id: ScheduleId,
    pub scheduled_for: Timestamp,
    pub schedule_revision: i32,
    pub state: OccurrenceState,
    pub reason: Option<String>,
    pub session_id: Option<SessionId>,
    pub run_id: Option<RunId>,
    pub created_at: Timestamp,
}

/// A `schedule_occurrences` row as stored.
#[derive(sqlx::FromRow)]
struct OccurrenceRecord {
    id: Uuid,
    schedule_id: Uuid,
    scheduled_for: jiff_sqlx::Timestamp,
    schedule_revision: i32,
    state: String,
    reason: Option<String>,
    session_id: Option<Uuid>,
    run_id: Option<Uuid>,
    created_at: jiff_sqlx::Timestamp,
}

impl OccurrenceRow {
    fn from_row(row: &PgRow) -> Result<OccurrenceRow> {
        let record = OccurrenceRecord::from_row(row)?;
        Ok(OccurrenceRow {
            id: record.id,
            schedule_id: ScheduleId::from_uuid(record.schedule_id),
            scheduled_for: timestamp(record.scheduled_for),
            schedule_revision: record.schedule_revision,
            state: parsed("occurrence state", &record.state, OccurrenceState::parse)?,
            reason: record.reason,
            session_id: record.session_id.map(SessionId::from_uuid),
            run_id: record.run_id.map(RunId::from_uuid),
            created_at: timestamp(record.created_at),
        })
    }
}

/// A validated schedule definition.
#[derive(Debug)]
pub struct NewSchedule<'a> {
    pub principal: &'a PrincipalId,
    pub title: &'a str,
    pub instruction: &'a str,
    pub agent_id: &'a str,
    pub agent_version: &'a str,
    pub policy_profile: &'a str,
    pub requested_scopes: &'a [String],
    pub limits: RunLimits,
    pub wait_timeout_seconds: u32,
    pub local_time: &'a str,
    pub timezone: &'a str,
    pub misfire_grace_seconds: u32,
    pub max_consecutive_failures: u32,
    pub next_fire_at: Timestamp,
    pub idempotency: IdempotencyClaim<'a>,
}

#[derive(Debug, PartialEq)]
pub enum CreateSchedule {
    Created {
        schedule: Box<ScheduleRow>,
        response: StoredResponse,
    },
    Earlier(Prior),
    /// No session was ever pinned to this agent version.
    UnknownAgentVersion,
}

#[derive(Debug, PartialEq)]
pub enum CancelSchedule {
    Cancelled(Box<ScheduleRow>),
    /// The schedule is at another revision than expected; nothing changed.
    RevisionMismatch(Box<ScheduleRow>),
    NotFound,
}

async fn version_exists(conn: &mut PgConnection, agent_id: &str, version: &str) -> Result<bool> {
    Ok(
        sqlx::query("SELECT 1 FROM agent_versions WHERE agent_id = $1 AND version = $2")
            .bind(agent_id)
            .bind(version)
            .fetch_optional(&mut *conn)
            .await?
            .is_some(),
    )
}

impl Store {
    /// Creates a schedule at revision 1, recording the response under its idempotency key.
    pub async fn create_schedule(
        &self,
        new: NewSchedule<'_>,
        render: impl FnOnce(&ScheduleRow) -> Result<StoredResponse>,
    ) -> Result<CreateSchedule> {
        self.transaction(
            async |tx: &mut PgConnection| {
                if let Some(prior) = idempotency::check(tx, new.principal, &new.idempotency).await? {
                    return Ok(CreateSchedule::Earlier(prior));
                }
                if !version_exists(tx, new.agent_id, new.agent_version).await? {
                    return Ok(CreateSchedule::UnknownAgentVersion);
                }
                let limits = new.limits;
                let sql = format!(
                    "INSERT INTO schedules (id, principal_id, title, instruction, agent_id, agent_version,
                     policy_profile,
                         requested_scopes, max_steps, max_model_calls, max_tool_calls, max_cost_micros,
                         run_timeout_seconds, cadence_kind, local_time, timezone, misfire_grace_seconds,
                         max_consecutive_failures, state, next_fire_at, wait_timeout_seconds)
                     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, 'DAILY', $14, $15, $16, $17,
                         'active', $18, $19)
                     RETURNING {SCHEDULE_COLUMNS}"
                );
                let insert = sqlx::query(&sql)
                    .bind(Uuid::now_v7())
                    .bind(new.principal.as_str())
                    .bind(new.title)
                    .bind(new.instruction)
                    .bind(new.agent_id)
                    .bind(new.agent_version)
                    .bind(new.policy_profile)
                    .bind(new.requested_scopes);
                let row = bind_limits!(insert, &limits)
                    .bind(new.local_time)
                    .bind(new.timezone)
                    .bind(signed(new.misfire_grace_seconds))
                    .bind(signed(new.max_consecutive_failures))
                    .bind(jiff_sqlx::Timestamp::from(new.next_fire_at))
                    .bind(signed(new.wait_timeout_seconds))
                    .fetch_one(&mut *tx)
                    .await?;
                let schedule = ScheduleRow::from_row(&row)?;
                let response = render(&schedule)?;
                idempotency::record(tx, new.principal, &new.idempotency, &response).await?;
                Ok(CreateSchedule::Created {
                    schedule: Box::new(schedule),
                    response,
                })
            },
            |outcome| matches!(outcome, CreateSchedule::Created { .. }),
        )
        .await
    }

    /// Every schedule of `principal`, oldest first.
    pub async fn schedules(&self, principal: &PrincipalId) -> Result<Vec<ScheduleRow>> {
        let sql = format!("SELECT {SCHEDULE_COLUMNS} FROM schedules WHERE principal_id = $1 ORDER BY created_at, id");
        let rows = sqlx::query(&sql).bind(principal.as_str()).fetch_all(&self.pool).await?;
        rows.iter().map(ScheduleRow::from_row).collect()
    }

    pub async fn schedule(&self, principal: &PrincipalId, id: ScheduleId) -> Result<Option<ScheduleRow>> {
        let sql = format!("SELECT {SCHEDULE_COLUMNS} FROM schedules WHERE id = $1 AND principal_id = $2");
        let row = crate::owned_row(&self.pool, &sql, id.as_uuid(), principal).await?;
        row.as_ref().map(ScheduleRow::from_row).transpose()
    }

    /// The schedule and its occurrences, newest first; `None` when there is no such schedule.
    pub async fn occurrences(
        &self,
        principal: &PrincipalId,
        id: ScheduleId,
    ) -> Result<Option<(ScheduleRow, Vec<OccurrenceRow>)>> {
        let Some(schedule) = self.schedule(principal, id).await? else {
            return Ok(None);
        };
        let rows = sqlx::query(
            "SELECT id, schedule_id, scheduled_for, schedule_revision, state, reason, session_id, run_id, created_at
             FROM schedule_occurrences WHERE schedule_id = $1 ORDER BY scheduled_for DESC",
        )
        .bind(id.as_uuid())
        .fetch_all(&self.pool)
        .await?;
        let occurrences = rows.iter().map(OccurrenceRow::from_row).collect::<Result<Vec<_>>>()?;
        Ok(Some((schedule, occurrences)))
    }

    /// Cancels the schedule if it is at `expected_revision`; the revision then increases and it
    /// never fires again. Cancelling a cancelled schedule at its current revision changes nothing.
    pub async fn cancel_schedule(
        &self,
        principal: &PrincipalId,
        id: ScheduleId,
        expected_revision: i32,
    ) -> Result<CancelSchedule> {
        self.transaction(
            async |tx: &mut PgConnection| {
                let sql =
                    format!("SELECT {SCHEDULE_COLUMNS} FROM schedules WHERE id = $1 AND principal_id = $2 FOR UPDATE");
                let found = crate::owned_row(&mut *tx, &sql, id.as_uuid(), principal).await?;
                let Some(row) = found else {
                    return Ok(CancelSchedule::NotFound);
                };
                let current = ScheduleRow::from_row(&row)?;
                // A retried cancel whose first answer was lost is answered the same way.
                let retried = current.state == ScheduleState::Cancelled && expected_revision == current.revision - 1;
                if current.state == ScheduleState::Cancelled && (retried || expected_revision == current.revision) {
                    return Ok(CancelSchedule::Cancelled(Box::new(current)));
                }
                if current.revision != expected_revision {
                    return Ok(CancelSchedule::RevisionMismatch(Box::new(current)));
                }
                let sql = format!(
                    "UPDATE schedules SET state = 'cancelled', revision = revision + 1, next_fire_at = NULL,
                         cancelled_at = now(), updated_at = now()
                     WHERE id = $1 RETURNING {SCHEDULE_COLUMNS}"
                );
                let row = sqlx::query(&sql).bind(id.as_uuid()).fetch_one(&mut *tx).await?;
                Ok(CancelSchedule::Cancelled(Box::new(ScheduleRow::from_row(&row)?)))
            },
            |outcome| matches!(outcome, CancelSchedule::Cancelled(_)),
        )
        .await
    }
}

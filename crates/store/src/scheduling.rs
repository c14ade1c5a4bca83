//! The schedule role's side of schedules: firing due occurrences exactly once, and settling an
//! occurrence when its run ends.
//!
//! A due schedule is locked with `SKIP LOCKED`, so two schedule processes never fire the same
//! one; its occurrence is unique per (schedule, instant) as a second guard. Firing creates the
//! fresh session, its first message and the queued run in the transaction that records the
//! occurrence and advances the schedule.

use domain::cadence::{Daily, parse_local_time};
use domain::ids::{RunId, ScheduleId, SessionId};
use domain::manifest::{AccountIds, authorize};
use domain::run::RunState;
use jiff::Timestamp;
use sqlx::PgConnection;
use uuid::Uuid;
use wire::event::{Event, ScheduledBy, UserMessage, UserMessageCreated};

use crate::events::{Touch, append_touching};
use crate::wake::{Hint, hint};
use crate::{Result, Store};

/// Outcome notifications wait this long before push delivery, like approvals.
const PUSH_DELAY_SECONDS: f64 = 30.0;
/// Why an occurrence did not run because it fired too late.
pub const MISFIRE: &str = "misfire";
/// Why a schedule stopped: its time zone or local time cannot be used on this host.
pub const INVALID_CADENCE: &str = "schedule.invalid_cadence";
/// Why an occurrence failed its firing-time authorization.
pub const AUTHORIZATION_FAILED: &str = "schedule.authorization_failed";

/// What one firing did.
#[derive(Debug, PartialEq)]
pub enum Firing {
    Started {
        schedule: ScheduleId,
        occurrence: Uuid,
        session: SessionId,
        run: RunId,
    },
    Skipped {
        schedule: ScheduleId,
        occurrence: Uuid,
        reason: &'static str,
    },
    Failed {
        schedule: ScheduleId,
        occurrence: Uuid,
        reason: &'static str,
    },
}

/// Queues the outcome alert of `occurrence`, raised at `raised`: it leaves no earlier than the push
/// delay after.
async fn notify_outcome(
    conn: &mut PgConnection,
    session: Option<Uuid>,
    run: Option<Uuid>,
    occurrence: Uuid,
    raised: jiff_sqlx::Timestamp,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO notification_outbox (id, kind, session_id, run_id, occurrence_id, deliver_after)
         VALUES ($1, 'schedule_outcome', $2, $3, $4, $6 + make_interval(secs => $5))",
    )
    .bind(Uuid::now_v7())
    .bind(session)
    .bind(run)
    .bind(occurrence)
    .bind(PUSH_DELAY_SECONDS)
    .bind(raised)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Counts a failed occurrence; the schedule stops at `max_consecutive_failures` in a row.
async fn count_failure(conn: &mut PgConnection, schedule: Uuid) -> Result<()> {
    sqlx::query(
        "UPDATE schedules SET consecutive_failures = consecutive_failures + 1, updated_at = now(),
             state = CASE WHEN consecutive_failures + 1 >= max_consecutive_failures AND state = 'active'
                          THEN 'stopped' ELSE state END,
             next_fire_at = CASE WHEN consecutive_failures + 1 >= max_consecutive_failures THEN NULL ELSE
             next_fire_at END
         WHERE id = $1",
    )
    .bind(schedule)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Settles the occurrence of a run that just ended (the run is locked by the caller): its state,
/// the schedule's failure count, and the outcome notification.
pub(crate) async fn settle_occurrence(
    conn: &mut PgConnection,
    run: RunId,
    state: RunState,
    reason: Option<&str>,
    now: jiff_sqlx::Timestamp,
) -> Result<()> {
    let settled: Option<(Uuid, Uuid, Option<Uuid>)> = sqlx::query_as(
        "UPDATE schedule_occurrences o SET state = $2, reason = $3, updated_at = now()
         FROM runs r WHERE r.id = $1 AND o.id = r.occurrence_id AND o.state = 'started'
         RETURNING o.id, o.schedule_id, o.session_id",
    )
    .bind(run.as_uuid())
    .bind(state.as_str())
    .bind(reason)
    .fetch_optional(&mut *conn)
    .await?;
    let Some((occurrence, schedule, session)) = settled else {
        return Ok(());
    };
    if state == RunState::Completed {
        sqlx::query("UPDATE schedules SET consecutive_failures = 0, updated_at = now() WHERE id = $1")
            .bind(schedule)
            .execute(&mut *conn)
            .await?;
    } else if state == RunState::Failed || reason == Some("deadline") {
        count_failure(conn, schedule).await?;
    }
    notify_outcome(conn, session, Some(run.as_uuid()), occurrence, now).await
}

/// An active schedule whose firing is due, as stored.
#[derive(sqlx::FromRow)]
struct DueSchedule {
    id: Uuid,
    principal_id: String,
    revision: i32,
    title: String,
    instruction: String,
    agent_id: String,
    agent_version: String,
    requested_scopes: Vec<String>,
    max_steps: i32,
    max_model_calls: i32,
    max_tool_calls: i32,
    max_cost_micros: i64,
    run_timeout_seconds: i32,
    wait_timeout_seconds: i32,
    local_time: String,
    timezone: String,
    misfire_grace_seconds: i32,
    next_fire_at: jiff_sqlx::Timestamp,
}

impl Store {
    /// Fires every active schedule due at `now` (at most `limit`), each in its own transaction.
    /// `accounts` are the connected mail accounts (ids only), `None` when mail is off.
    pub async fn fire_due(&self, now: Timestamp, accounts: Option<&AccountIds>, limit: u32) -> Result<Vec<Firing>> {
        let mut fired = Vec::new();
        while fired.len() < limit as usize {
            let Some(firing) = self.fire_one(now, accounts).await? else {
                break;
            };
            fired.push(firing);
        }
        Ok(fired)
    }

    /// When the earliest active schedule is next due, if any schedule is active.
    pub async fn next_due(&self) -> Result<Option<Timestamp>> {
        let next: Option<jiff_sqlx::Timestamp> =
            sqlx::query_scalar("SELECT min(next_fire_at) FROM schedules WHERE state = 'active'")
                .fetch_one(&self.pool)
                .await?;
        Ok(next.map(|next| next.to_jiff()))
    }

    async fn fire_one(&self, now: Timestamp, accounts: Option<&AccountIds>) -> Result<Option<Firing>> {
        self.transaction(
            async |tx: &mut PgConnection| {
                let due = sqlx::query_as::<_, DueSchedule>(
                    "SELECT id, principal_id, revision, title, instruction, agent_id, agent_version, requested_scopes,
                            max_steps, max_model_calls, max_tool_calls, max_cost_micros, run_timeout_seconds,
                            wait_timeout_seconds, local_time, timezone, misfire_grace_seconds, next_fire_at
                     FROM schedules WHERE state = 'active' AND next_fire_at <= $1
                     ORDER BY next_fire_at LIMIT 1 FOR UPDATE SKIP LOCKED",
                )
                .bind(jiff_sqlx::Timestamp::from(now))
                .fetch_optional(&mut *tx)
                .await?;
                let Some(row) = due else { return Ok(None) };
                let schedule: Uuid = row.id;
                let scheduled_for = crate::timestamp(row.next_fire_at);
                let (local_time, timezone) = (&row.local_time, &row.timezone);
                let cadence = jiff::tz::TimeZone::get(timezone)
                    .ok()
                    .zip(parse_local_time(local_time))
                    .map(|(zone, local_time)| Daily { local_time, zone });
                let Some(cadence) = cadence else {
                    // The zone is no longer known here (tzdata changed, or hosts differ): stop this
                    // schedule rather than retry it ahead of every other due schedule forever.
                    sqlx::query(
                        "UPDATE schedules SET state = 'stopped', next_fire_at = NULL, updated_at = now() WHERE id = $1",
                    )
                    .bind(schedule)
                    .execute(&mut *tx)
                    .await?;
                    return Ok(Some(Firing::Failed {
                        schedule: ScheduleId::from_uuid(schedule),
                        occurrence: Uuid::nil(),
                        reason: INVALID_CADENCE,
                    }));
                };
                // One instant at a time: each missed instant is recorded (skipped when too late)
                // and the loop comes back for the next one, so the on-time firing still fires.
                let next = cadence.next_after(scheduled_for);
                sqlx::query("UPDATE schedules SET next_fire_at = $2, updated_at = now() WHERE id = $1")
                    .bind(schedule)
                    .bind(jiff_sqlx::Timestamp::from(next))
                    .execute(&mut *tx)
                    .await?;

                let occurrence = Uuid::now_v7();
                let revision = row.revision;
                // The occurrence keeps what its alert names: this revision's title and the wall
                // time it was scheduled for, in the schedule's zone.
                let scheduled_local = scheduled_for
                    .to_zoned(cadence.zone.clone())
                    .strftime("%Y-%m-%d %H:%M")
                    .to_string();
                let inserted = sqlx::query(
                    "INSERT INTO schedule_occurrences (id, schedule_id, scheduled_for, schedule_revision, state, title,
                     scheduled_local)
                     VALUES ($1, $2, $3, $4, 'started', $5, $6) ON CONFLICT (schedule_id, scheduled_for) DO NOTHING",
                )
                .bind(occurrence)
                .bind(schedule)
                .bind(jiff_sqlx::Timestamp::from(scheduled_for))
                .bind(revision)
                .bind(&row.title)
                .bind(&scheduled_local)
                .execute(&mut *tx)
                .await?;
                let schedule_id = ScheduleId::from_uuid(schedule);
                if inserted.rows_affected() == 0 {
                    // Already fired for this instant: only the schedule moved on.
                    return Ok(Some(Firing::Skipped {
                        schedule: schedule_id,
                        occurrence,
                        reason: "duplicate",
                    }));
                }

                let grace = row.misfire_grace_seconds;
                let lateness = now.as_second() - scheduled_for.as_second();
                let settle = async |tx: &mut PgConnection, state: &str, reason: &'static str| -> Result<()> {
                    sqlx::query("UPDATE schedule_occurrences SET state = $2, reason = $3 WHERE id = $1")
                        .bind(occurrence)
                        .bind(state)
                        .bind(reason)
                        .execute(&mut *tx)
                        .await?;
                    Ok(())
                };
                if lateness > i64::from(grace) {
                    settle(tx, "skipped", MISFIRE).await?;
                    notify_outcome(tx, None, None, occurrence, jiff_sqlx::Timestamp::from(now)).await?;
                    return Ok(Some(Firing::Skipped {
                        schedule: schedule_id,
                        occurrence,
                        reason: MISFIRE,
                    }));
                }
                let requested = &row.requested_scopes;
                if !authorize(requested, accounts) {
                    settle(tx, "failed", AUTHORIZATION_FAILED).await?;
                    count_failure(tx, schedule).await?;
                    notify_outcome(tx, None, None, occurrence, jiff_sqlx::Timestamp::from(now)).await?;
                    return Ok(Some(Firing::Failed {
                        schedule: schedule_id,
                        occurrence,
                        reason: AUTHORIZATION_FAILED,
                    }));
                }

                // A fresh session pinned to the schedule's agent version, then the run.
                let principal = &row.principal_id;
                let session: Uuid = sqlx::query_scalar(
                    "WITH position AS (
                         UPDATE session_index_clock SET position = position + 1 RETURNING position
                     )
                     INSERT INTO sessions (id, principal_id, index_position, agent_id, agent_version, title,
                     schedule_id)
                     SELECT $1, $2, position.position, $3, $4, $5, $6 FROM position RETURNING id",
                )
                .bind(Uuid::now_v7())
                .bind(principal)
                .bind(&row.agent_id)
                .bind(&row.agent_version)
                .bind(&row.title)
                .bind(schedule)
                .fetch_one(&mut *tx)
                .await?;
                // Its working time is measured by the store's clock, like every run's.
                let run: Uuid = sqlx::query_scalar(
                    "INSERT INTO runs (id, session_id, state, principal_id, max_steps, max_model_calls, max_tool_calls,
                                       max_cost_micros, run_timeout_seconds, deadline_at, occurrence_id,
                                       requested_scopes, wait_timeout_seconds, working_since)
                     VALUES ($1, $2, 'queued', $3, $4, $5, $6, $7, $8, $12 + make_interval(secs => $8), $9, $10, $11,
                             $12)
                     RETURNING id",
                )
                .bind(Uuid::now_v7())
                .bind(session)
                .bind(principal)
                .bind(row.max_steps)
                .bind(row.max_model_calls)
                .bind(row.max_tool_calls)
                .bind(row.max_cost_micros)
                .bind(row.run_timeout_seconds)
                .bind(occurrence)
                .bind(requested)
                .bind(row.wait_timeout_seconds)
                .bind(self.now_sql())
                .fetch_one(&mut *tx)
                .await?;
                let (session_id, run_id) = (SessionId::from_uuid(session), RunId::from_uuid(run));
                let instruction = row.instruction.clone();
                let event = Event::UserMessageCreated(UserMessageCreated {
                    run_id: run,
                    message: UserMessage {
                        text: Some(instruction),
                        attachments: Vec::new(),
                    },
                    schedule: Some(ScheduledBy {
                        schedule_id: schedule,
                        occurrence_id: occurrence,
                        scheduled_for,
                    }),
                });
                let seq = append_touching(tx, session_id, Some(run_id), &event, Some(Touch { title: None })).await?;
                sqlx::query(
                    "UPDATE runs SET message_seq = $2 WHERE id =
                             $1",
                )
                .bind(run)
                .bind(seq)
                .execute(&mut *tx)
                .await?;
                sqlx::query("UPDATE schedule_occurrences SET session_id = $2, run_id = $3 WHERE id = $1")
                    .bind(occurrence)
                    .bind(session)
                    .bind(run)
                    .execute(&mut *tx)
                    .await?;
                hint(Hint::Run);
                Ok(Some(Firing::Started {
                    schedule: schedule_id,
                    occurrence,
                    session: session_id,
                    run: run_id,
                }))
            },
            |_| true,
        )
        .await
    }
}

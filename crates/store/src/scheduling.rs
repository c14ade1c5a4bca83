//! The schedule role's side of schedules: firing due occurrences exactly once, and settling an
//! occurrence when its run ends.
//!
//! A due schedule is locked with `SKIP LOCKED`, so two schedule processes never fire the same
//! one; its occurrence is unique per (schedule, instant) as a second guard. Firing creates the
//! fresh session, its first message and the queued run in the transaction that records the
//! occurrence and advances the schedule. Due schedules fire in batches: one transaction and one
//! statement per step for up to [`FIRING_BATCH`] of them, so ten thousand schedules due at one
//! instant cost a few dozen transactions, not ten thousand.

use domain::cadence::{Daily, parse_local_time};
use domain::ids::{RunId, ScheduleId, SessionId};
use domain::mail_tools::authorize;
use domain::manifest::AccountIds;
use domain::run::RunState;
use jiff::Timestamp;
use sqlx::PgConnection;
use uuid::Uuid;
use wire::event::{Event, ScheduledBy, UserMessage, UserMessageCreated};

use crate::events::{Appending, FIRST_SEQ, append_to_sessions};
use crate::notifications::PUSH_DELAY_SECONDS;
use crate::schedules::DefinitionRecord;
use crate::wake::{Hint, hint};
use crate::{Result, Store};

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
    notify_outcomes(conn, &[(session, run, occurrence)], raised).await
}

/// [`notify_outcome`] for each `(session, run, occurrence)` of `outcomes`, in one statement.
async fn notify_outcomes(
    conn: &mut PgConnection,
    outcomes: &[(Option<Uuid>, Option<Uuid>, Uuid)],
    raised: jiff_sqlx::Timestamp,
) -> Result<()> {
    let ids: Vec<Uuid> = outcomes.iter().map(|_| Uuid::now_v7()).collect();
    let sessions: Vec<Option<Uuid>> = outcomes.iter().map(|outcome| outcome.0).collect();
    let runs: Vec<Option<Uuid>> = outcomes.iter().map(|outcome| outcome.1).collect();
    let occurrences: Vec<Uuid> = outcomes.iter().map(|outcome| outcome.2).collect();
    sqlx::query(
        "INSERT INTO notification_outbox (id, kind, session_id, run_id, occurrence_id, deliver_after)
         SELECT n.id, 'schedule_outcome', n.session_id, n.run_id, n.occurrence_id, $5 + make_interval(secs => $6)
         FROM unnest($1::uuid[], $2::uuid[], $3::uuid[], $4::uuid[]) AS n(id, session_id, run_id, occurrence_id)",
    )
    .bind(&ids)
    .bind(&sessions)
    .bind(&runs)
    .bind(&occurrences)
    .bind(raised)
    .bind(PUSH_DELAY_SECONDS)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// Counts a failed occurrence; the schedule stops at `max_consecutive_failures` in a row.
async fn count_failure(conn: &mut PgConnection, schedule: Uuid) -> Result<()> {
    count_failures(conn, &[schedule]).await
}

/// [`count_failure`] for each of `schedules`.
async fn count_failures(conn: &mut PgConnection, schedules: &[Uuid]) -> Result<()> {
    sqlx::query(
        "UPDATE schedules SET consecutive_failures = consecutive_failures + 1, updated_at = now(),
             state = CASE WHEN consecutive_failures + 1 >= max_consecutive_failures AND state = 'active'
                          THEN 'stopped' ELSE state END,
             next_fire_at = CASE WHEN consecutive_failures + 1 >= max_consecutive_failures THEN NULL ELSE
             next_fire_at END
         WHERE id = ANY($1)",
    )
    .bind(schedules)
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
    #[sqlx(flatten)]
    definition: DefinitionRecord,
    next_fire_at: jiff_sqlx::Timestamp,
}

/// Schedules fired in one transaction at most.
const FIRING_BATCH: usize = 500;

/// What a locked due schedule's occurrence will be.
#[derive(Clone, Copy, PartialEq)]
enum Plan {
    /// Starts, creating this session and run.
    Start {
        session: Uuid,
        run: Uuid,
    },
    Misfire,
    Unauthorized,
}

/// The occurrences of one batch, column by column (each statement takes them as arrays).
#[derive(Default)]
struct Occurrences {
    id: Vec<Uuid>,
    schedule: Vec<Uuid>,
    scheduled_for: Vec<jiff_sqlx::Timestamp>,
    revision: Vec<i32>,
    state: Vec<&'static str>,
    reason: Vec<Option<&'static str>>,
    title: Vec<String>,
    scheduled_local: Vec<String>,
    /// The session and run a starting occurrence creates (their ids chosen before they exist:
    /// the occurrence is written once, and its foreign keys are checked at commit).
    session: Vec<Option<Uuid>>,
    run: Vec<Option<Uuid>>,
}

/// The sessions and runs of the occurrences that start, column by column.
#[derive(Default)]
struct Starts {
    occurrence: Vec<Uuid>,
    schedule: Vec<Uuid>,
    scheduled_for: Vec<Timestamp>,
    instruction: Vec<String>,
    session: Vec<Uuid>,
    run: Vec<Uuid>,
    principal: Vec<String>,
    agent_id: Vec<String>,
    agent_version: Vec<String>,
    title: Vec<String>,
    max_steps: Vec<i32>,
    max_model_calls: Vec<i32>,
    max_tool_calls: Vec<i32>,
    max_cost_micros: Vec<i64>,
    run_timeout_seconds: Vec<i32>,
    wait_timeout_seconds: Vec<i32>,
    requested_scopes: Vec<String>,
}

impl Store {
    /// Fires every active schedule due at `now` (at most `limit` occurrences), up to
    /// [`FIRING_BATCH`] schedules per transaction. A schedule that missed several instants fires
    /// one instant per transaction, so each is recorded (skipped when too late) and the on-time
    /// one still fires. `accounts` are the connected mail accounts (ids only), `None` when mail is
    /// off.
    pub async fn fire_due(&self, now: Timestamp, accounts: Option<&AccountIds>, limit: u32) -> Result<Vec<Firing>> {
        let mut fired = Vec::new();
        while fired.len() < limit as usize {
            let batch = (limit as usize - fired.len()).min(FIRING_BATCH);
            let firings = self.fire_batch(now, accounts, batch).await?;
            if firings.is_empty() {
                break;
            }
            fired.extend(firings);
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

    /// Fires up to `limit` due schedules in one transaction, with one statement per step for the
    /// whole batch (the session index clock is locked once per batch, not once per firing).
    async fn fire_batch(&self, now: Timestamp, accounts: Option<&AccountIds>, limit: usize) -> Result<Vec<Firing>> {
        let working_since = self.now_sql();
        self.transaction(
            async |tx: &mut PgConnection| {
                let due = sqlx::query_as::<_, DueSchedule>(
                    "SELECT id, principal_id, revision, title, instruction, agent_id, agent_version, requested_scopes,
                            max_steps, max_model_calls, max_tool_calls, max_cost_micros, run_timeout_seconds,
                            wait_timeout_seconds, local_time, timezone, misfire_grace_seconds, next_fire_at
                     FROM schedules WHERE state = 'active' AND next_fire_at <= $1
                     ORDER BY next_fire_at LIMIT $2 FOR UPDATE SKIP LOCKED",
                )
                .bind(jiff_sqlx::Timestamp::from(now))
                .bind(i64::try_from(limit).unwrap_or(i64::MAX))
                .fetch_all(&mut *tx)
                .await?;
                if due.is_empty() {
                    return Ok(Vec::new());
                }
                let mut fired = Vec::with_capacity(due.len());
                let mut stopped = Vec::new();
                let (mut advanced, mut next_fire) = (Vec::new(), Vec::new());
                let mut occurrences = Occurrences::default();
                let mut plans = Vec::new();
                for row in due {
                    let scheduled_for = crate::timestamp(row.next_fire_at);
                    let cadence = jiff::tz::TimeZone::get(&row.definition.timezone)
                        .ok()
                        .zip(parse_local_time(&row.definition.local_time))
                        .map(|(zone, local_time)| Daily { local_time, zone });
                    let Some(cadence) = cadence else {
                        // The zone is no longer known here (tzdata changed, or hosts differ): stop
                        // this schedule rather than retry it ahead of every other due one forever.
                        stopped.push(row.id);
                        fired.push(Firing::Failed {
                            schedule: ScheduleId::from_uuid(row.id),
                            occurrence: Uuid::nil(),
                            reason: INVALID_CADENCE,
                        });
                        continue;
                    };
                    advanced.push(row.id);
                    next_fire.push(jiff_sqlx::Timestamp::from(cadence.next_after(scheduled_for)));
                    let lateness = now.as_second() - scheduled_for.as_second();
                    let plan = if lateness > i64::from(row.definition.misfire_grace_seconds) {
                        Plan::Misfire
                    } else if !authorize(&row.definition.requested_scopes, accounts) {
                        Plan::Unauthorized
                    } else {
                        Plan::Start {
                            session: Uuid::now_v7(),
                            run: Uuid::now_v7(),
                        }
                    };
                    let (state, reason) = match plan {
                        Plan::Start { .. } => ("started", None),
                        Plan::Misfire => ("skipped", Some(MISFIRE)),
                        Plan::Unauthorized => ("failed", Some(AUTHORIZATION_FAILED)),
                    };
                    let occurrence = Uuid::now_v7();
                    occurrences.id.push(occurrence);
                    occurrences.schedule.push(row.id);
                    occurrences.scheduled_for.push(row.next_fire_at);
                    occurrences.revision.push(row.revision);
                    occurrences.state.push(state);
                    occurrences.reason.push(reason);
                    // The occurrence keeps what its alert names: this revision's title and the
                    // wall time it was scheduled for, in the schedule's zone.
                    occurrences.title.push(row.definition.title.clone());
                    occurrences.scheduled_local.push(
                        scheduled_for
                            .to_zoned(cadence.zone.clone())
                            .strftime("%Y-%m-%d %H:%M")
                            .to_string(),
                    );
                    let started = match plan {
                        Plan::Start { session, run } => (Some(session), Some(run)),
                        Plan::Misfire | Plan::Unauthorized => (None, None),
                    };
                    occurrences.session.push(started.0);
                    occurrences.run.push(started.1);
                    plans.push((occurrence, scheduled_for, plan, row));
                }
                if !stopped.is_empty() {
                    sqlx::query(
                        "UPDATE schedules SET state = 'stopped', next_fire_at = NULL, updated_at = now()
                         WHERE id = ANY($1)",
                    )
                    .bind(&stopped)
                    .execute(&mut *tx)
                    .await?;
                }
                if plans.is_empty() {
                    return Ok(fired);
                }
                sqlx::query(
                    "UPDATE schedules s SET next_fire_at = n.next_fire_at, updated_at = now()
                     FROM unnest($1::uuid[], $2::timestamptz[]) AS n(id, next_fire_at) WHERE s.id = n.id",
                )
                .bind(&advanced)
                .bind(&next_fire)
                .execute(&mut *tx)
                .await?;
                // Unique per (schedule, instant): an instant already fired inserts nothing, and
                // only the schedule moved on. A starting occurrence names the session and run
                // created below for it alone: their foreign keys are checked at commit, so the
                // occurrence is written once (and a duplicate creates neither).
                sqlx::query(
                    "SET CONSTRAINTS schedule_occurrences_session_id_fkey, schedule_occurrences_run_id_fkey DEFERRED",
                )
                .execute(&mut *tx)
                .await?;
                let inserted: Vec<Uuid> = sqlx::query_scalar(
                    "INSERT INTO schedule_occurrences (id, schedule_id, scheduled_for, schedule_revision, state, reason,
                                                       title, scheduled_local, session_id, run_id)
                     SELECT * FROM unnest($1::uuid[], $2::uuid[], $3::timestamptz[], $4::int[], $5::text[], $6::text[],
                                          $7::text[], $8::text[], $9::uuid[], $10::uuid[])
                     ON CONFLICT (schedule_id, scheduled_for) DO NOTHING RETURNING id",
                )
                .bind(&occurrences.id)
                .bind(&occurrences.schedule)
                .bind(&occurrences.scheduled_for)
                .bind(&occurrences.revision)
                .bind(&occurrences.state)
                .bind(&occurrences.reason)
                .bind(&occurrences.title)
                .bind(&occurrences.scheduled_local)
                .bind(&occurrences.session)
                .bind(&occurrences.run)
                .fetch_all(&mut *tx)
                .await?;
                let inserted: std::collections::HashSet<Uuid> = inserted.into_iter().collect();

                let (mut alerted, mut failing) = (Vec::new(), Vec::new());
                let mut starts = Starts::default();
                for (occurrence, scheduled_for, plan, row) in plans {
                    let schedule = ScheduleId::from_uuid(row.id);
                    if !inserted.contains(&occurrence) {
                        fired.push(Firing::Skipped {
                            schedule,
                            occurrence,
                            reason: "duplicate",
                        });
                        continue;
                    }
                    match plan {
                        Plan::Misfire => {
                            alerted.push((None, None, occurrence));
                            fired.push(Firing::Skipped {
                                schedule,
                                occurrence,
                                reason: MISFIRE,
                            });
                        }
                        Plan::Unauthorized => {
                            alerted.push((None, None, occurrence));
                            failing.push(row.id);
                            fired.push(Firing::Failed {
                                schedule,
                                occurrence,
                                reason: AUTHORIZATION_FAILED,
                            });
                        }
                        Plan::Start { session, run } => {
                            fired.push(Firing::Started {
                                schedule,
                                occurrence,
                                session: SessionId::from_uuid(session),
                                run: RunId::from_uuid(run),
                            });
                            starts.push(occurrence, scheduled_for, session, run, row);
                        }
                    }
                }
                if !failing.is_empty() {
                    count_failures(tx, &failing).await?;
                }
                if !alerted.is_empty() {
                    notify_outcomes(tx, &alerted, jiff_sqlx::Timestamp::from(now)).await?;
                }
                if !starts.session.is_empty() {
                    start(tx, &starts, working_since).await?;
                }
                Ok(fired)
            },
            |_| true,
        )
        .await
    }
}

impl Starts {
    fn push(&mut self, occurrence: Uuid, scheduled_for: Timestamp, session: Uuid, run: Uuid, row: DueSchedule) {
        self.occurrence.push(occurrence);
        self.schedule.push(row.id);
        self.scheduled_for.push(scheduled_for);
        self.instruction.push(row.definition.instruction);
        self.session.push(session);
        self.run.push(run);
        self.principal.push(row.principal_id);
        self.agent_id.push(row.definition.agent_id);
        self.agent_version.push(row.definition.agent_version);
        self.title.push(row.definition.title);
        self.max_steps.push(row.definition.max_steps);
        self.max_model_calls.push(row.definition.max_model_calls);
        self.max_tool_calls.push(row.definition.max_tool_calls);
        self.max_cost_micros.push(row.definition.max_cost_micros);
        self.run_timeout_seconds.push(row.definition.run_timeout_seconds);
        self.wait_timeout_seconds.push(row.definition.wait_timeout_seconds);
        // A text[] column cannot be one row of a 2-D array parameter of varying lengths: each
        // run's scopes travel as one JSON array.
        self.requested_scopes
            .push(serde_json::to_string(&row.definition.requested_scopes).unwrap_or_else(|_| "[]".into()));
    }
}

/// Creates each starting occurrence's fresh session (pinned to the schedule's agent version),
/// its queued run and the first message, the schedule's instruction.
async fn start(tx: &mut PgConnection, starts: &Starts, working_since: jiff_sqlx::Timestamp) -> Result<()> {
    let count = i64::try_from(starts.session.len()).unwrap_or(i64::MAX);
    let last: i64 = sqlx::query_scalar("UPDATE session_index_clock SET position = position + $1 RETURNING position")
        .bind(count)
        .fetch_one(&mut *tx)
        .await?;
    let positions: Vec<i64> = (last - count + 1..=last).collect();
    sqlx::query(
        "INSERT INTO sessions (id, principal_id, index_position, agent_id, agent_version, title, schedule_id,
                               last_event_seq)
         SELECT *, $8 FROM unnest($1::uuid[], $2::text[], $3::bigint[], $4::text[], $5::text[], $6::text[], $7::uuid[])",
    )
    .bind(&starts.session)
    .bind(&starts.principal)
    .bind(&positions)
    .bind(&starts.agent_id)
    .bind(&starts.agent_version)
    .bind(&starts.title)
    .bind(&starts.schedule)
    .bind(FIRST_SEQ)
    .execute(&mut *tx)
    .await?;
    // Its working time is measured by the store's clock, like every run's.
    sqlx::query(
        "INSERT INTO runs (id, session_id, state, principal_id, max_steps, max_model_calls, max_tool_calls,
                           max_cost_micros, run_timeout_seconds, deadline_at, occurrence_id, requested_scopes,
                           wait_timeout_seconds, working_since, message_seq)
         SELECT r.id, r.session_id, 'queued', r.principal_id, r.max_steps, r.max_model_calls, r.max_tool_calls,
                r.max_cost_micros, r.run_timeout_seconds, $12 + make_interval(secs => r.run_timeout_seconds),
                r.occurrence_id, ARRAY(SELECT jsonb_array_elements_text(r.scopes::jsonb)), r.wait_timeout_seconds, $12,
                $13
         FROM unnest($1::uuid[], $2::uuid[], $3::text[], $4::int[], $5::int[], $6::int[], $7::bigint[], $8::int[],
                     $9::uuid[], $10::text[], $11::int[])
              AS r(id, session_id, principal_id, max_steps, max_model_calls, max_tool_calls, max_cost_micros,
                   run_timeout_seconds, occurrence_id, scopes, wait_timeout_seconds)",
    )
    .bind(&starts.run)
    .bind(&starts.session)
    .bind(&starts.principal)
    .bind(&starts.max_steps)
    .bind(&starts.max_model_calls)
    .bind(&starts.max_tool_calls)
    .bind(&starts.max_cost_micros)
    .bind(&starts.run_timeout_seconds)
    .bind(&starts.occurrence)
    .bind(&starts.requested_scopes)
    .bind(&starts.wait_timeout_seconds)
    .bind(working_since)
    .bind(FIRST_SEQ)
    .execute(&mut *tx)
    .await?;
    let events: Vec<Event> = (0..starts.session.len())
        .map(|at| {
            Event::UserMessageCreated(UserMessageCreated {
                run_id: starts.run[at],
                message: UserMessage {
                    text: Some(starts.instruction[at].clone()),
                    attachments: Vec::new(),
                },
                schedule: Some(ScheduledBy {
                    schedule_id: starts.schedule[at],
                    occurrence_id: starts.occurrence[at],
                    scheduled_for: starts.scheduled_for[at],
                }),
            })
        })
        .collect();
    let appended: Vec<(SessionId, Option<RunId>, &Event)> = (0..starts.session.len())
        .map(|at| {
            (
                SessionId::from_uuid(starts.session[at]),
                Some(RunId::from_uuid(starts.run[at])),
                &events[at],
            )
        })
        .collect();
    // Each session is new, inserted with its counter at its first event: the runs were created
    // pointing at sequence 1, and the message is written there.
    append_to_sessions(tx, &appended, Appending::ToNew).await?;
    hint(Hint::Run);
    Ok(())
}

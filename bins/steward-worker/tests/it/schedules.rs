//! Schedules end to end with an injected clock: the acceptance flow, exactly-once firing by two
//! schedulers, misfires and authorization failures.

use std::collections::HashSet;

use domain::manifest::AccountIds;
use jiff::{Timestamp, ToSpan};
use reqwest::Method;
use serde_json::{Value, json};

use crate::support::Stack;

const MANIFEST: &str = r#"{"version": 1, "default_account": "personal", "accounts": [
    {"account_id": "personal", "read_credential_file": "/nonexistent/r.json",
     "write_credential_file": "/nonexistent/w.json", "send_credential_file": "/nonexistent/s.json"}]}"#;

fn accounts() -> AccountIds {
    AccountIds::parse(MANIFEST.as_bytes()).expect("manifest")
}

/// Creates a schedule (Europe/London) through the API and returns it.
async fn create(stack: &Stack, instruction: &str, scopes: Value, local_time: &str, grace: u32, failures: u32) -> Value {
    create_in(stack, "Europe/London", instruction, scopes, local_time, grace, failures).await
}

async fn create_in(
    stack: &Stack,
    timezone: &str,
    instruction: &str,
    scopes: Value,
    local_time: &str,
    grace: u32,
    failures: u32,
) -> Value {
    let changes = json!({
        "cadence": { "kind": "DAILY", "local_time": local_time, "timezone": timezone },
        "misfire_grace_seconds": grace,
        "max_consecutive_failures": failures
    });
    stack.create_schedule(instruction, scopes, changes).await.0
}

/// A stack whose token may read and write sessions and schedules.
async fn scheduling_stack() -> Stack {
    Stack::api(&[(
        "AUTH_SCOPES",
        "sessions.read,sessions.write,schedules.read,schedules.write",
    )])
    .await
}

async fn outcome_notifications(stack: &Stack) -> i64 {
    stack
        .scalar("SELECT count(*) FROM notification_outbox WHERE kind = 'schedule_outcome'")
        .await
}

/// A daily local time (`HH:MM:00`) in `zone`, `minutes` from now: tests that compare firing
/// times must not depend on the hour the suite runs at.
fn local_time_from_now(zone: &str, minutes: i64) -> String {
    let zone = jiff::tz::TimeZone::get(zone).expect("zone");
    (Timestamp::now() + minutes.minutes())
        .to_zoned(zone)
        .strftime("%H:%M:00")
        .to_string()
}

fn next_fire(schedule: &Value) -> Timestamp {
    schedule["next_fire_at"]
        .as_str()
        .expect("next fire")
        .parse()
        .expect("instant")
}

#[tokio::test]
async fn the_schedule_acceptance_flow() {
    let mut stack = scheduling_stack().await;
    stack.start_worker(&[]).await;
    let store = stack_store(&stack).await;
    // The mail version of this flow (reads freely, parks before create_draft, completes after
    // one approval given ten minutes later) is `mail::a_scheduled_run_with_read_and_write_scopes…`.
    let schedule = create(&stack, "Summarise the day.", json!([]), "07:00:00", 60, 3).await;
    let id = schedule["id"].as_str().expect("id").to_owned();
    let due = next_fire(&schedule);

    let fired = store
        .fire_due(due + 5.seconds(), Some(&accounts()), 10)
        .await
        .expect("fire");
    let [store::Firing::Started { run, session, .. }] = fired.as_slice() else {
        panic!("one start expected: {fired:?}")
    };
    let (run, session) = (run.to_string(), session.to_string());
    let session_row = stack.get(&format!("/v1/sessions/{session}")).await;
    assert_eq!(session_row["schedule_id"], id.as_str());
    assert_eq!(
        session_row["agent_version"], schedule["agent_version"],
        "pinned to the schedule's agent version"
    );

    stack.completes(&run).await;
    let occurrences = stack.get(&format!("/v1/schedules/{id}/occurrences")).await;
    assert_eq!(occurrences["occurrences"][0]["state"], "completed");
    assert_eq!(occurrences["occurrences"][0]["run_id"], run.as_str());
    assert_eq!(outcome_notifications(&stack).await, 1);

    // The smoke schedule is cancelled and does not fire the next day.
    let cancel = stack
        .request(Method::DELETE, &format!("/v1/schedules/{id}?expected_revision=1"))
        .send()
        .await
        .expect("send");
    assert_eq!(cancel.status(), 200);
    let next_day = store
        .fire_due(due + 25.hours(), Some(&accounts()), 10)
        .await
        .expect("fire");
    assert!(next_day.is_empty(), "{next_day:?}");
    assert_eq!(
        stack.scalar::<i64>("SELECT count(*) FROM schedule_occurrences").await,
        1
    );
    // Cancelled, it stays the owner's record: its state, and the occurrence with its run.
    let read = stack.get(&format!("/v1/schedules/{id}")).await;
    assert_eq!(read["schedule"]["state"], "cancelled");
    let occurrences = stack.get(&format!("/v1/schedules/{id}/occurrences")).await;
    assert_eq!(occurrences["occurrences"][0]["state"], "completed");
    assert_eq!(occurrences["occurrences"][0]["run_id"], run.as_str());
}

#[tokio::test]
async fn a_scheduled_run_holds_only_the_tools_its_schedule_requested_scopes_for() {
    let mut stack = scheduling_stack().await;
    stack.start_worker(&[]).await;
    // notes.add needs `notes.write`, schedule.create `schedules.write`: no schedule can request
    // them, so a scheduled run that reaches for one fails authorization instead of acting.
    for (tool, arguments) in [
        ("notes.add", r#"{"text": "from a schedule"}"#),
        (
            "schedule.create",
            r#"{"title": "t", "instruction": "i", "local_time": "08:00:00", "timezone": "UTC"}"#,
        ),
        ("notes.list", "{}"),
    ] {
        let instruction = format!("/tool {tool} {arguments}");
        let schedule = create(&stack, &instruction, json!([]), "07:00:00", 60, 3).await;
        let fired = stack_store(&stack)
            .await
            .fire_due(next_fire(&schedule) + 5.seconds(), None, 10)
            .await
            .expect("fire");
        let [store::Firing::Started { run, session, .. }] = fired.as_slice() else {
            panic!("one start expected: {fired:?}")
        };
        let (run, session) = (run.to_string(), session.to_string());
        let ended = stack.wait_for(&run, &["completed", "failed", "cancelled"]).await;
        assert_eq!(
            (ended["state"].as_str(), ended["reason"].as_str()),
            (Some("failed"), Some("schedule.authorization_failed")),
            "{tool}: {ended}"
        );
        let result = stack.tool_results(&session).await.remove(0);
        assert_eq!(result["code"], "schedule.authorization_failed", "{tool}");
        let id = schedule["id"].as_str().expect("id");
        let occurrences = stack.get(&format!("/v1/schedules/{id}/occurrences")).await;
        assert_eq!(
            (
                occurrences["occurrences"][0]["state"].as_str(),
                occurrences["occurrences"][0]["reason"].as_str()
            ),
            (Some("failed"), Some("schedule.authorization_failed")),
            "{tool}"
        );
    }
    assert_eq!(stack.scalar::<i64>("SELECT count(*) FROM notes").await, 0);
    assert_eq!(
        stack.scalar::<i64>("SELECT count(*) FROM schedules").await,
        3,
        "no schedule was made by a scheduled run"
    );
}

#[tokio::test]
async fn an_outcome_alert_names_the_title_that_ran_and_the_scheduled_local_time() {
    let stack = scheduling_stack().await;
    // A zone never at UTC+0, so the time shown is visibly the schedule's.
    let schedule = create_in(&stack, "Asia/Tokyo", "hello", json!([]), "07:30:00", 60, 3).await;
    let due = next_fire(&schedule);
    stack_store(&stack)
        .await
        .fire_due(due + 61.seconds(), None, 10)
        .await
        .expect("fire");
    // Renamed after it ran (as a later revision would be): the alert keeps the title that ran.
    sqlx::query("UPDATE schedules SET title = 'Renamed'")
        .execute(&stack.db.pool)
        .await
        .expect("rename");
    let notify = stack.db.store_as("notify").await;
    let due_alerts = notify
        .claim_due_notifications("notifier", due + 1.hours(), 60, 10)
        .await
        .expect("claim");
    let local = due
        .to_zoned(jiff::tz::TimeZone::get("Asia/Tokyo").expect("zone"))
        .strftime("%Y-%m-%d 07:30")
        .to_string();
    let texts: Vec<String> = due_alerts.iter().map(|due| due.alert().text()).collect();
    assert_eq!(
        texts,
        [format!("Smoke schedule ({local}): skipped, it started too late")]
    );
}

/// The schedule role's view of the stack: its own login.
async fn stack_store(stack: &Stack) -> store::Store {
    stack.db.store_as("schedule").await
}

#[tokio::test]
async fn two_schedulers_fire_each_occurrence_exactly_once() {
    let stack = scheduling_stack().await;
    let mut schedules = Vec::new();
    // A hundred consecutive minutes starting two hours from now, so every schedule's first
    // firing is on the same day whatever the hour the suite runs at.
    for index in 0..100 {
        let local_time = local_time_from_now("Europe/London", 120 + index);
        schedules.push(create(&stack, "hello", json!([]), &local_time, 86_400, 3).await);
    }
    let start = schedules.iter().map(next_fire).min().expect("schedules");
    // Two schedule processes (separate pools) run through ten days of firing times together.
    let first = stack.db.store_as("schedule").await;
    let second = stack.db.store_as("schedule").await;
    let mut fired = 0;
    // Day 0 to day 9 of firing times (all within 100 minutes of each other), with room for a
    // DST shift; day 10's firings fall outside.
    for hour in 0..(9 * 24 + 4) {
        let now = start + (hour * 60).minutes();
        let (a, b) = tokio::join!(first.fire_due(now, None, 1000), second.fire_due(now, None, 1000));
        fired += a.expect("fire").len() + b.expect("fire").len();
    }
    let total: i64 = stack.scalar("SELECT count(*) FROM schedule_occurrences").await;
    let distinct: i64 = stack
        .scalar("SELECT count(DISTINCT (schedule_id, scheduled_for)) FROM schedule_occurrences")
        .await;
    assert_eq!(
        (total, distinct, fired as i64),
        (1000, 1000, 1000),
        "ten firings of each of 100 schedules, once each"
    );
    let runs: i64 = stack
        .scalar("SELECT count(*) FROM runs WHERE occurrence_id IS NOT NULL")
        .await;
    assert_eq!(runs, 1000);
    let per_schedule: HashSet<i64> =
        sqlx::query_scalar("SELECT count(*) FROM schedule_occurrences GROUP BY schedule_id")
            .fetch_all(&stack.db.pool)
            .await
            .expect("counts")
            .into_iter()
            .collect();
    assert_eq!(per_schedule, HashSet::from([10]));
}

#[tokio::test]
async fn a_late_firing_is_skipped_with_a_reason_and_notified() {
    let stack = scheduling_stack().await;
    let schedule = create(&stack, "hello", json!([]), "07:00:00", 60, 3).await;
    let due = next_fire(&schedule);
    let fired = stack_store(&stack)
        .await
        .fire_due(due + 61.seconds(), None, 10)
        .await
        .expect("fire");
    assert!(
        matches!(fired.as_slice(), [store::Firing::Skipped { reason: "misfire", .. }]),
        "{fired:?}"
    );
    let id = schedule["id"].as_str().expect("id");
    let occurrences = stack.get(&format!("/v1/schedules/{id}/occurrences")).await;
    assert_eq!(occurrences["occurrences"][0]["state"], "skipped");
    assert_eq!(occurrences["occurrences"][0]["reason"], "misfire");
    assert_eq!(outcome_notifications(&stack).await, 1);
    assert_eq!(stack.scalar::<i64>("SELECT count(*) FROM runs").await, 0, "nothing ran");
    // The schedule moved on to the next day.
    let read = stack.get(&format!("/v1/schedules/{id}")).await;
    assert!(next_fire(&read["schedule"]) > due);
}

#[tokio::test]
async fn unauthorized_firings_fail_and_enough_of_them_stop_the_schedule() {
    let stack = scheduling_stack().await;
    let schedule = create(
        &stack,
        "read my mail",
        json!(["mcp.mail_read.use"]),
        "07:00:00",
        86_400,
        2,
    )
    .await;
    let id = schedule["id"].as_str().expect("id");
    let store = stack_store(&stack).await;
    let due = next_fire(&schedule);
    // Mail is not connected: the requested scope cannot be derived at firing time.
    for day in 0..3 {
        store
            .fire_due(due + (day * 24).hours() + 1.seconds(), None, 10)
            .await
            .expect("fire");
    }
    let read = stack.get(&format!("/v1/schedules/{id}")).await;
    assert_eq!(read["schedule"]["state"], "stopped", "two failures in a row stop it");
    assert_eq!(read["schedule"]["next_fire_at"], Value::Null);
    let failed: Vec<String> = sqlx::query_scalar("SELECT reason FROM schedule_occurrences ORDER BY scheduled_for")
        .fetch_all(&stack.db.pool)
        .await
        .expect("reasons");
    assert_eq!(
        failed,
        ["schedule.authorization_failed", "schedule.authorization_failed"]
    );
    assert_eq!(stack.scalar::<i64>("SELECT count(*) FROM runs").await, 0);
}

/// A stack with a worker, and a conversation whose run asks for `schedule.create` with
/// `arguments`, waiting for its approval: (stack, session, run, approval).
async fn schedule_tool(arguments: &str) -> (Stack, String, String, Value) {
    let mut stack = Stack::api(&[]).await;
    stack.start_worker(&[]).await;
    let session = stack.session().await;
    let run = stack
        .submit(&session, &format!("/tool schedule.create {arguments}"))
        .await;
    stack.wait_for(&run, &["waiting_approval"]).await;
    let approval = stack.pending_approvals(&session).await.remove(0);
    (stack, session, run, approval)
}

#[tokio::test]
async fn the_conversational_tool_always_creates_schedules_without_scopes() {
    // The model asks for mail scopes too; the tool ignores them.
    let (stack, session, run, approval) = schedule_tool(
        r#"{"title": "Daily digest", "instruction": "Summarise my notes.", "local_time": "08:00:00", "timezone": "Asia/Kolkata", "requested_scopes": ["mcp.mail_read.use"]}"#,
    )
    .await;
    assert_eq!(
        (approval["tool"].as_str(), approval["risk"].as_str()),
        (Some("schedule.create"), Some("medium"))
    );
    stack.decide_ok(&approval, "approve_once").await;
    stack.completes(&run).await;

    let (title, scopes, version): (String, Vec<String>, String) =
        sqlx::query_as("SELECT title, requested_scopes, agent_version FROM schedules")
            .fetch_one(&stack.db.pool)
            .await
            .expect("schedule");
    assert_eq!(title, "Daily digest");
    assert!(
        scopes.is_empty(),
        "schedule.create always fixes requested_scopes to an empty set"
    );
    let pinned: String = stack
        .scalar(&format!("SELECT agent_version FROM sessions WHERE id = '{session}'"))
        .await;
    assert_eq!(version, pinned, "pinned to the conversation's agent version");
}

/// A title the model gives passes the rules of the owner's own: no control characters (here an
/// escape sequence and a bell), so nothing is created and the model hears why.
#[tokio::test]
async fn the_conversational_tool_refuses_a_title_with_control_characters() {
    let (stack, _, run, approval) = schedule_tool(
        r#"{"title": "Digest ]52;c;cm0gLXJm", "instruction": "Summarise my notes.", "local_time": "08:00:00", "timezone": "UTC"}"#,
    )
    .await;
    stack.decide_ok(&approval, "approve_once").await;
    stack.completes(&run).await;
    assert_eq!(stack.scalar::<i64>("SELECT count(*) FROM schedules").await, 0);
    let code: String = stack
        .scalar("SELECT code FROM tool_invocations WHERE tool = 'schedule.create'")
        .await;
    assert_eq!(code, "tool.invalid_arguments");
}

#[tokio::test]
async fn after_downtime_each_missed_day_is_skipped_and_the_on_time_firing_runs() {
    let stack = scheduling_stack().await;
    let schedule = create_in(&stack, "UTC", "hello", json!([]), "07:00:00", 60, 3).await;
    let due = next_fire(&schedule);
    // The scheduler was down for three days and comes back 30 seconds after the fourth firing time.
    let fired = stack_store(&stack)
        .await
        .fire_due(due + 72.hours() + 30.seconds(), None, 10)
        .await
        .expect("fire");
    let summary: Vec<&str> = fired
        .iter()
        .map(|firing| match firing {
            store::Firing::Skipped { reason, .. } => *reason,
            store::Firing::Started { .. } => "started",
            store::Firing::Failed { reason, .. } => *reason,
        })
        .collect();
    assert_eq!(summary, ["misfire", "misfire", "misfire", "started"]);
    assert_eq!(outcome_notifications(&stack).await, 3);
    let id = schedule["id"].as_str().expect("id");
    let read = stack.get(&format!("/v1/schedules/{id}")).await;
    assert_eq!(next_fire(&read["schedule"]), due + 96.hours(), "next: the day after");
}

#[tokio::test]
async fn a_schedule_whose_zone_is_unknown_stops_without_blocking_the_others() {
    let stack = scheduling_stack().await;
    // The broken schedule is due an hour before the good one, whatever the hour now.
    let good_time = local_time_from_now("UTC", 180);
    let broken_time = local_time_from_now("UTC", 120);
    let good = create_in(&stack, "UTC", "hello", json!([]), &good_time, 60, 3).await;
    let broken = create_in(&stack, "UTC", "hello", json!([]), &broken_time, 60, 3).await;
    // As if this host's tz database lost the zone after the schedule was created.
    sqlx::query("UPDATE schedules SET timezone = 'Nowhere/Atlantis' WHERE id = $1::uuid")
        .bind(broken["id"].as_str().expect("id"))
        .execute(&stack.db.pool)
        .await
        .expect("break the zone");
    let fired = stack_store(&stack)
        .await
        .fire_due(next_fire(&good) + 5.seconds(), None, 10)
        .await
        .expect("fire");
    assert!(
        fired.iter().any(|f| matches!(
            f,
            store::Firing::Failed {
                reason: "schedule.invalid_cadence",
                ..
            }
        )),
        "{fired:?}"
    );
    assert!(
        fired.iter().any(|f| matches!(f, store::Firing::Started { .. })),
        "the good schedule still fired: {fired:?}"
    );
    let state: String = stack
        .scalar(&format!(
            "SELECT state FROM schedules WHERE id = '{}'",
            broken["id"].as_str().expect("id")
        ))
        .await;
    assert_eq!(state, "stopped");
}

//! Waiting for the owner does not burn a run's time, with the stores' clock moved on: a run's
//! timeout counts its working time only, and waiting has its own expiry (a day unless the agent
//! or the schedule says otherwise). Pushes leave no earlier than 30 seconds after they are raised.

use jiff::{SignedDuration, Timestamp, ToSpan};
use reqwest::Method;
use serde_json::json;
use store::Clock;

use crate::support::{Stack, json};

#[tokio::test]
async fn an_approval_given_ten_minutes_later_completes_the_run() {
    let mut stack = Stack::api(&[]).await;
    stack.start_worker(&[]).await;
    let session = stack.session().await;
    let run = stack
        .submit(&session, r#"/tool notes.add {"text": "after lunch"}"#)
        .await;
    stack.wait_for(&run, &["waiting_approval"]).await;

    // Ten minutes pass (twice the run's 300-second timeout); the worker's sweeps run meanwhile.
    stack.clock.advance(SignedDuration::from_mins(10));
    let store = stack.store_as("worker").await;
    assert_eq!(store.work().expire_overdue_runs(64).await.expect("sweep"), 0);
    let approval = stack.pending_approvals(&session).await.remove(0);
    stack.decide_ok(&approval, "approve_once").await;
    stack.completes(&run).await;
    assert_eq!(stack.scalar::<i64>("SELECT count(*) FROM notes").await, 1);
}

#[tokio::test]
async fn no_answer_past_the_waiting_expiry_cancels_the_run_with_reason_deadline() {
    let mut stack = Stack::api(&[]).await;
    stack.start_worker(&[]).await;
    let session = stack.session().await;
    let run = stack.submit(&session, "/ask Which day suits you?").await;
    stack.wait_for(&run, &["waiting_input"]).await;
    let store = stack.store_as("worker").await;

    // A day is the default wait: a minute short of it, the run still waits.
    stack
        .clock
        .advance(SignedDuration::from_hours(24) - SignedDuration::from_mins(1));
    assert_eq!(store.work().expire_overdue_runs(64).await.expect("sweep"), 0);
    assert_eq!(stack.run(&run).await["state"], "waiting_input");

    stack.clock.advance(SignedDuration::from_mins(2));
    let cancelled = stack.wait_for(&run, &["cancelled", "completed", "failed"]).await;
    assert_eq!(
        (cancelled["state"].as_str(), cancelled["reason"].as_str()),
        (Some("cancelled"), Some("deadline"))
    );
    let status: String = stack.scalar("SELECT status FROM questions").await;
    assert_eq!(status, "EXPIRED");
    let last = stack.events(&session).await.pop().expect("event");
    assert_eq!(
        (last.0.as_str(), last.1["reason"].as_str()),
        ("run.cancelled", Some("deadline"))
    );
}

#[tokio::test]
async fn a_busy_run_past_its_working_time_is_cancelled_and_parked_time_does_not_count() {
    // No worker: the test holds the run's lease itself, as a worker busy with it would.
    let stack = Stack::api(&[("RUN_TIMEOUT_SECONDS", "300")]).await;
    let store = stack.store_as("worker").await;
    let session = stack.session().await;
    let run = stack.submit(&session, "hello").await;
    let claimed = store
        .work()
        .claim_run("busy", 3600)
        .await
        .expect("claim")
        .expect("a run");
    let lease = claimed.lease.clone();

    // 200 seconds of work, then the run parks on a question for an hour.
    stack.clock.advance(SignedDuration::from_secs(200));
    let arguments = json!({ "question": "Which day?" });
    let step = store::ModelStep {
        text: "",
        calls: vec![store::NewCall {
            call_id: "call_1",
            tool: "owner.ask",
            arguments: &arguments,
            risk: Some(domain::approval::Risk::Low),
        }],
        input_tokens: 1,
        output_tokens: 1,
        cost: domain::run::Cost::from_micros(0),
    };
    let invocations = store
        .work()
        .record_model_step(&lease, step)
        .await
        .expect("step")
        .expect("held");
    let question = store
        .work()
        .park_for_question(&lease, &invocations[0], "Which day?", 86_400)
        .await
        .expect("park")
        .expect("held");
    stack.clock.advance(SignedDuration::from_hours(1));
    let answer = stack
        .request(Method::POST, &format!("/v1/runs/{run}/input"))
        .json(&json!({ "question_id": question, "text": "Tuesday" }))
        .send()
        .await
        .expect("send");
    assert_eq!(json(answer).await.0, 200);

    // Resumed with 100 seconds of its 300 left: the hour parked did not count.
    let resumed = store
        .work()
        .claim_run("busy", 3600)
        .await
        .expect("claim")
        .expect("requeued");
    let deadline = resumed.run.deadline_at;
    let left = deadline.duration_since(store.now());
    assert!(
        (SignedDuration::from_secs(98)..=SignedDuration::from_secs(100)).contains(&left),
        "{left:?} of working time left"
    );
    stack.clock.advance(SignedDuration::from_secs(95));
    assert_eq!(
        store.work().expire_overdue_runs(64).await.expect("sweep"),
        0,
        "still within its time"
    );
    stack.clock.advance(SignedDuration::from_secs(10));
    assert_eq!(store.work().expire_overdue_runs(64).await.expect("sweep"), 1);
    let ended = stack.run(&run).await;
    assert_eq!(
        (ended["state"].as_str(), ended["reason"].as_str()),
        (Some("cancelled"), Some("deadline"))
    );
    // The busy worker lost the run: it can record nothing more.
    let counters = resumed.counters;
    assert_eq!(
        store
            .work()
            .complete_run(&resumed.lease, &counters)
            .await
            .expect("complete"),
        None
    );
}

#[tokio::test]
async fn a_schedule_sets_how_long_its_runs_wait_for_the_owner() {
    let stack = Stack::api(&[(
        "AUTH_SCOPES",
        "sessions.read,sessions.write,schedules.read,schedules.write",
    )])
    .await;
    let changes = json!({ "wait_timeout_seconds": 120, "cadence": { "kind": "DAILY", "local_time": "07:00:00", "timezone": "UTC" } });
    let (schedule, due) = stack.create_schedule("hello", json!([]), changes).await;
    assert_eq!(schedule["wait_timeout_seconds"], 120);
    let fired = stack
        .store_as("schedule")
        .await
        .fire_due(due + 1.seconds(), None, 10)
        .await
        .expect("fire");
    assert!(matches!(fired.as_slice(), [store::Firing::Started { .. }]), "{fired:?}");

    let store = stack.store_as("worker").await;
    let claimed = store
        .work()
        .claim_run("w", 3600)
        .await
        .expect("claim")
        .expect("the scheduled run");
    assert_eq!(claimed.wait_timeout_seconds, Some(120));
}

#[tokio::test]
async fn pushes_leave_no_earlier_than_thirty_seconds_after_they_are_raised() {
    let mut stack = Stack::api(&[(
        "AUTH_SCOPES",
        "sessions.read,sessions.write,schedules.read,schedules.write",
    )])
    .await;
    stack.start_worker(&[]).await;
    let notify = stack.store_as("notify").await;
    let due = async |at: Timestamp| -> Vec<String> {
        let mut kinds: Vec<String> = notify
            .claim_due_notifications("notifier", at, 60, 50)
            .await
            .expect("claim")
            .into_iter()
            .map(|due| format!("{:?}", due.notification.kind))
            .collect();
        kinds.sort();
        kinds
    };

    // An approval and a question, raised by the stores' clock (an hour ahead of the database's,
    // so a delay measured by the database would show).
    stack.clock.advance(SignedDuration::from_hours(1));
    let raised_from = stack.clock.now();
    let first = stack.session().await;
    let approval_run = stack.submit(&first, r#"/tool notes.add {"text": "x"}"#).await;
    let second = stack.session().await;
    let question_run = stack.submit(&second, "/ask Now?").await;
    stack.wait_for(&approval_run, &["waiting_approval"]).await;
    stack.wait_for(&question_run, &["waiting_input"]).await;
    let raised_until = stack.clock.now();
    assert!(
        due(raised_from + 29.seconds()).await.is_empty(),
        "nothing leaves before 30 seconds"
    );
    assert_eq!(due(raised_until + 30.seconds()).await, ["Approval", "Question"]);

    // A schedule outcome (a misfire), raised at the scheduler's firing instant.
    let (_, fire_at) = stack
        .create_schedule("hello", json!([]), json!({ "title": "Late" }))
        .await;
    let raised = fire_at + 61.seconds();
    stack
        .store_as("schedule")
        .await
        .fire_due(raised, None, 10)
        .await
        .expect("fire");
    assert!(
        due(raised + 29.seconds()).await.is_empty(),
        "nothing leaves before 30 seconds"
    );
    assert_eq!(due(raised + 30.seconds()).await, ["ScheduleOutcome"]);
}

//! Workers killed with SIGKILL: mid-dispatch the side effect is never repeated and ends
//! `outcome_unknown`; at a safe point another worker completes the run. A worker whose database
//! goes away keeps running and finishes the run once it is back.

use std::os::unix::process::ExitStatusExt;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::Ordering;

use serde_json::json;

use crate::support::{FakeState, FakeWebhook, Stack, agent_definitions, arrival, fake_model};

fn spawn_worker(stack: &Stack, extra: &[(&str, &str)]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_steward-worker"))
        .envs(stack.worker_env(extra))
        .env("LOG_LEVEL", "warn")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("start steward-worker")
}

fn kill_hard(mut child: Child) {
    child.kill().expect("SIGKILL");
    let status = child.wait().expect("wait");
    assert_eq!(status.signal(), Some(9), "the worker died of SIGKILL");
}

#[tokio::test]
async fn a_worker_killed_mid_dispatch_leaves_the_effect_at_most_once_and_the_outcome_unknown() {
    let webhook = FakeWebhook::start(true).await;
    let definitions = agent_definitions(
        json!({ "provider": "scripted", "model": "scripted-1" }),
        Some(&webhook.url),
    );
    let mut stack = Stack::api(&[("AGENT_DEFINITIONS", &definitions)]).await;
    let worker = spawn_worker(&stack, &[]);

    let session = stack.session().await;
    let run = stack
        .submit(&session, r#"/tool webhook.post {"body": {"lights": "off"}}"#)
        .await;
    stack.wait_for(&run, &["waiting_approval"]).await;
    let approval = stack.pending_approvals(&session).await.remove(0);
    assert_eq!(approval["risk"], "high");
    stack.decide_ok(&approval, "approve_once").await;

    // The post reached the receiver, which holds it: the worker is between dispatching and completion.
    arrival(&webhook.arrived, "the webhook post").await;
    let state: String = stack.scalar("SELECT state FROM tool_invocations").await;
    assert_eq!(state, "dispatching", "dispatching was committed before the side effect");
    kill_hard(worker);

    // Another worker takes over once the dead worker's lease expires.
    stack.start_worker(&[]).await;
    stack.completes(&run).await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    assert_eq!(
        webhook.hits.load(Ordering::SeqCst),
        1,
        "the side effect was never repeated"
    );
    let state: String = stack.scalar("SELECT state FROM tool_invocations").await;
    assert_eq!(state, "outcome_unknown");
    assert_eq!(
        stack.first_outcome(&session).await,
        (Some("outcome_unknown".into()), Some("tool.outcome_unknown".into()))
    );
    assert_eq!(
        stack.scalar::<i32>("SELECT attempts FROM runs").await,
        3,
        "claimed, re-claimed after approval, resumed"
    );
}

#[tokio::test]
async fn a_worker_killed_at_a_safe_point_is_replaced_and_the_run_completes() {
    let model = fake_model(FakeState {
        hold_first: true,
        ..FakeState::default()
    })
    .await;
    let definitions = agent_definitions(json!({ "provider": "openai", "model": "gpt-test" }), None);
    let mut stack = Stack::api(&[("AGENT_DEFINITIONS", &definitions)]).await;
    let worker = spawn_worker(&stack, &[("OPENAI_BASE_URL", &model.url)]);

    let session = stack.session().await;
    let run = stack.submit(&session, "hello").await;
    // The model call is in flight (the server holds it): nothing side-effecting has started.
    arrival(model.arrived(), "the first model call").await;
    assert_eq!(stack.run(&run).await["state"], "running");
    kill_hard(worker);

    stack.start_worker(&[("OPENAI_BASE_URL", &model.url)]).await;
    stack.completes(&run).await;
    assert_eq!(
        model.requests().len(),
        2,
        "the model call was made again by the new worker"
    );
    let kinds: Vec<String> = stack.events(&session).await.into_iter().map(|(kind, _)| kind).collect();
    assert_eq!(kinds, ["user.message.created", "assistant.message", "run.completed"]);
    assert_eq!(stack.scalar::<i32>("SELECT attempts FROM runs").await, 2);
}

#[tokio::test]
async fn cancelling_during_a_dispatch_waits_for_the_tool_and_records_its_outcome() {
    let webhook = FakeWebhook::start(true).await;
    let definitions = agent_definitions(
        json!({ "provider": "scripted", "model": "scripted-1" }),
        Some(&webhook.url),
    );
    let mut stack = Stack::api(&[("AGENT_DEFINITIONS", &definitions)]).await;
    stack.start_worker(&[]).await;
    let session = stack.session().await;
    let run = stack
        .submit(&session, r#"/tool webhook.post {"body": {"door": "lock"}}"#)
        .await;
    stack.wait_for(&run, &["waiting_approval"]).await;
    let approval = stack.pending_approvals(&session).await.remove(0);
    stack.decide_ok(&approval, "approve_once").await;
    arrival(&webhook.arrived, "the webhook post").await;

    // The owner stops the run while the post is in flight.
    assert_eq!(stack.cancel(&run).await, 200);
    // The worker loses its lease, but waits for the call it dispatched.
    tokio::time::sleep(std::time::Duration::from_millis(2500)).await;
    webhook.release.notify_one();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        let state: String = stack.scalar("SELECT state FROM tool_invocations").await;
        if state != "dispatching" {
            assert_eq!(state, "succeeded", "the real outcome is recorded, not guessed");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the dispatch was never settled");
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(stack.run(&run).await["state"], "cancelled");
    assert_eq!(webhook.hits.load(Ordering::SeqCst), 1);
    assert_eq!(stack.tool_results(&session).await[0]["status"], "succeeded");
}

#[tokio::test]
async fn a_worker_rides_out_the_database_going_away_and_then_finishes_the_run() {
    let stack = Stack::api(&[]).await;
    let relay = testkit::outage::DatabaseRelay::start(&stack.db.url).await;
    let through = relay.url(&stack.db.url_as("worker"));
    let mut worker = spawn_worker(&stack, &[("DATABASE_URL", &through)]);
    let session = stack.session().await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;

    // The database goes away under the worker (its connections cut, new ones refused) while a
    // message waits for it.
    relay.down();
    let run = stack.submit(&session, "Hello while the database is away").await;
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    assert!(
        worker.try_wait().expect("the worker's status").is_none(),
        "the worker neither panicked nor exited"
    );
    assert_eq!(stack.run(&run).await["state"], "queued");

    relay.up();
    stack.completes(&run).await;
    kill_hard(worker);
}

//! The call worker against a call-provider stand-in (`testkit::callprov`) and a real database,
//! each role with its own login: receipts written by the ingress login, reservations by the
//! worker's, everything else by the call login.

use std::path::{Path, PathBuf};

use callprov::Client;
use domain::ids::PrincipalId;
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};
use steward_call_worker::{CallWorker, Pass};
use store::retention::{Retention, Task};
use store::{Reserve, Store};
use testkit::TestDatabase;
use testkit::callprov::{DispatchMode, FakeCallProvider};
use uuid::Uuid;

const KEY: &str = "cp-key-made-for-this-test";
const NUMBER: &str = "+15551230000";
const RECIPIENT: &str = "+15557654321";

fn configuration_json(assistant_name: Option<&str>) -> Value {
    let mut value = json!({
        "version": 1,
        "account_id": "home",
        "phone_number": NUMBER,
        "public_name": "Alex Rivera",
        "public_profile": "Alex is a carpenter in Portland.",
        "voice": "maya",
        "max_duration_minutes": 5,
        "webhook_url": "https://steward.example.org/webhooks/callprov",
    });
    if let Some(name) = assistant_name {
        value["assistant_name"] = json!(name);
    }
    value
}

fn write_configuration(path: &Path, value: &Value) {
    std::fs::write(path, value.to_string()).expect("write the configuration");
}

struct Setup {
    db: TestDatabase,
    provider: FakeCallProvider,
    worker: CallWorker,
    /// The worker role's store (reservations).
    reserving: Store,
    configuration: PathBuf,
    _dir: tempfile::TempDir,
}

async fn setup(notify: bool) -> Setup {
    let db = TestDatabase::new().await;
    if notify {
        db.grant_call_notifications().await;
    }
    let provider = FakeCallProvider::start(KEY, &[NUMBER]).await;
    let dir = tempfile::tempdir().expect("a temporary directory");
    let key = dir.path().join("callprov-api-key");
    testkit::write_private(&key, KEY);
    let configuration = dir.path().join("callprov-configuration.json");
    write_configuration(&configuration, &configuration_json(None));
    let vars = [
        ("CALLPROV_BASE_URL", provider.url.clone()),
        ("CALLPROV_API_KEY_FILE", key.display().to_string()),
    ];
    let endpoint =
        callprov::key::Endpoint::from_env(|name| vars.iter().find(|(n, _)| *n == name).map(|(_, v)| v.clone()))
            .expect("the endpoint");
    let worker = CallWorker {
        store: db.store_as("call").await,
        client: Client::new(endpoint),
        configuration: configuration.clone(),
        notify,
    };
    let reserving = db.store_as("worker").await;
    Setup {
        db,
        provider,
        worker,
        reserving,
        configuration,
        _dir: dir,
    }
}

impl Setup {
    async fn receipt(&self, call_id: &str) {
        self.db
            .store_as("ingress")
            .await
            .record_call_receipt(call_id)
            .await
            .expect("a receipt");
    }

    fn revision(&self) -> String {
        callprov::config::load(&self.configuration)
            .expect("the configuration")
            .revision()
            .to_string()
    }

    async fn reserve(&self, revision: &str) -> Reserve {
        let brief =
            json!({ "to": RECIPIENT, "purpose": "Confirm the delivery window.", "may_say": "Tuesday 9 to 12 works." });
        self.reserving
            .reserve_outbound_call(&PrincipalId::owner(), Uuid::new_v4(), RECIPIENT, &brief, revision)
            .await
            .expect("reserve")
    }

    async fn pass(&self, now: Timestamp) -> Pass {
        self.worker.pass(now).await.expect("a pass")
    }

    async fn state(&self, id: Uuid) -> (String, Option<String>, Option<String>) {
        sqlx::query_as("SELECT state, failure, provider_call_id FROM call_records WHERE id = $1")
            .bind(id)
            .fetch_one(&self.db.pool)
            .await
            .expect("the call")
    }

    async fn notifications(&self) -> Vec<(String, Option<Uuid>)> {
        sqlx::query_as("SELECT kind, call_id FROM notification_outbox ORDER BY created_at")
            .fetch_all(&self.db.pool)
            .await
            .expect("notifications")
    }

    fn dispatches(&self) -> usize {
        self.provider
            .requests()
            .iter()
            .filter(|request| request.method == "POST" && request.path == "/v1/calls")
            .count()
    }
}

fn reserved(reserve: Reserve) -> Uuid {
    match reserve {
        Reserve::Reserved(id) => id,
        other => panic!("not reserved: {other:?}"),
    }
}

#[tokio::test]
async fn an_inbound_call_is_recorded_once_with_its_notification() {
    let setup = setup(true).await;
    let call_id = setup.provider.inbound_call(
        "+15559990000",
        NUMBER,
        &[
            ("assistant", "Hello, you've reached Alex Rivera."),
            ("user", "It's Sam, about the table."),
        ],
        "Sam called about the table.",
    );
    setup.receipt(&call_id).await;
    setup.receipt(&call_id).await;
    let pass = setup.pass(Timestamp::now()).await;
    assert_eq!((pass.recorded, pass.notified), (1, 1), "{pass:?}");

    let (id, direction, state, counterpart, transcript, summary): (
        Uuid,
        String,
        String,
        Option<String>,
        Value,
        Option<String>,
    ) = sqlx::query_as(
        "SELECT id, direction, state, counterpart, transcript, summary FROM call_records WHERE kind = 'call'",
    )
    .fetch_one(&setup.db.pool)
    .await
    .expect("one call");
    assert_eq!((direction.as_str(), state.as_str()), ("inbound", "finished"));
    assert_eq!(counterpart.as_deref(), Some("+15559990000"));
    assert_eq!(transcript[1]["text"], json!("It's Sam, about the table."));
    assert_eq!(summary.as_deref(), Some("Sam called about the table."));
    assert_eq!(setup.notifications().await, [("call_finished".to_owned(), Some(id))]);

    // Nothing is left to do; a late repeated delivery is harmless.
    assert_eq!(setup.pass(Timestamp::now()).await, Pass::default());
    setup.receipt(&call_id).await;
    let pass = setup.pass(Timestamp::now()).await;
    assert_eq!((pass.recorded, pass.duplicates), (0, 1), "{pass:?}");
    assert_eq!(setup.notifications().await.len(), 1);
}

#[tokio::test]
async fn without_call_notifications_the_call_is_recorded_and_nothing_is_enqueued() {
    let setup = setup(false).await;
    let call_id = setup
        .provider
        .inbound_call("+15559990000", NUMBER, &[("user", "Hi")], "A short call.");
    setup.receipt(&call_id).await;
    let pass = setup.pass(Timestamp::now()).await;
    assert_eq!((pass.recorded, pass.notified), (1, 0));
    assert!(setup.notifications().await.is_empty());
}

#[tokio::test]
async fn the_record_and_its_notification_commit_together_or_not_at_all() {
    // The worker believes notifications are on, but the login may not enqueue them (the grant
    // is applied only with AGENT_CALL_NOTIFICATIONS_ENABLED=1): the notification's insert fails
    // inside the transaction, so the record is not committed either and the receipt stays due.
    let mut setup = setup(false).await;
    setup.worker.notify = true;
    let call_id = setup
        .provider
        .inbound_call("+15559990000", NUMBER, &[("user", "Hi")], "A short call.");
    setup.receipt(&call_id).await;
    let outbound = reserved(setup.reserve(&setup.revision()).await);
    let error = setup
        .worker
        .pass(Timestamp::now())
        .await
        .expect_err("the notification is refused");
    assert_eq!(
        setup.state(outbound).await.0,
        "dispatched",
        "the other stages ran all the same"
    );
    assert!(format!("{error:#}").contains("permission denied"), "{error:#}");
    let calls: i64 =
        sqlx::query_scalar("SELECT count(*) FROM call_records WHERE kind = 'call' AND direction = 'inbound'")
            .fetch_one(&setup.db.pool)
            .await
            .expect("count");
    assert_eq!(calls, 0, "no record without its notification");
    assert_eq!(setup.worker.store.receipts_due(10).await.expect("due").len(), 1);

    setup.db.grant_call_notifications().await;
    let pass = setup.pass(Timestamp::now()).await;
    assert_eq!((pass.recorded, pass.notified), (1, 1));
    assert_eq!(setup.notifications().await.len(), 1);
}

#[tokio::test]
async fn an_approved_brief_is_dispatched_once_and_settles_when_the_call_ends() {
    let setup = setup(true).await;
    let id = reserved(setup.reserve(&setup.revision()).await);
    let pass = setup.pass(Timestamp::now()).await;
    assert_eq!(pass.dispatched, 1, "{pass:?}");
    let (state, _, provider_call_id) = setup.state(id).await;
    assert_eq!(state, "dispatched");
    let provider_call_id = provider_call_id.expect("the provider's id");
    let sent = &setup
        .provider
        .requests()
        .iter()
        .find(|r| r.path == "/v1/calls")
        .expect("a dispatch")
        .body
        .clone();
    assert_eq!(sent["metadata"]["steward_call"], json!(id.to_string()));
    assert_eq!(sent["phone_number"], json!(RECIPIENT));
    assert!(
        sent["task"]
            .as_str()
            .is_some_and(|task| task.contains("Tuesday 9 to 12 works."))
    );

    // An early delivery while the call runs settles nothing; the final one does, once.
    setup.provider.answer(&provider_call_id);
    setup.receipt(&provider_call_id).await;
    let pass = setup.pass(Timestamp::now()).await;
    assert_eq!((pass.pending, pass.recorded, pass.dispatched), (1, 0, 0), "{pass:?}");
    setup.provider.finish(
        &provider_call_id,
        &[("assistant", "Hello"), ("user", "Tuesday is fine")],
        "They confirmed Tuesday.",
    );
    setup.receipt(&provider_call_id).await;
    let pass = setup.pass(Timestamp::now()).await;
    assert_eq!((pass.recorded, pass.notified), (1, 1), "{pass:?}");
    assert_eq!(setup.state(id).await.0, "finished");
    assert_eq!(setup.notifications().await, [("call_finished".to_owned(), Some(id))]);
    assert_eq!(setup.dispatches(), 1, "dispatched once");
    // The reservation is free again.
    reserved(setup.reserve(&setup.revision()).await);
}

#[tokio::test]
async fn a_changed_configuration_revision_makes_the_approval_undispatchable() {
    let setup = setup(false).await;
    let id = reserved(setup.reserve(&setup.revision()).await);
    // Adding the assistant's (default) name is a change too.
    write_configuration(&setup.configuration, &configuration_json(Some("Steward")));
    let pass = setup.pass(Timestamp::now()).await;
    assert_eq!((pass.dispatched, pass.not_placed), (0, 1), "{pass:?}");
    assert_eq!(
        setup.state(id).await,
        ("not_placed".to_owned(), Some("revision_changed".to_owned()), None)
    );
    assert_eq!(setup.dispatches(), 0, "nothing was sent");
    // Fresh approval under the new revision goes through.
    let again = reserved(setup.reserve(&setup.revision()).await);
    assert_eq!(setup.pass(Timestamp::now()).await.dispatched, 1);
    assert_eq!(setup.state(again).await.0, "dispatched");
}

#[tokio::test]
async fn an_uncertain_dispatch_is_reconciled_from_history_and_never_redialled() {
    let setup = setup(false).await;
    setup.provider.set_dispatch(DispatchMode::PlaceThenFail);
    let id = reserved(setup.reserve(&setup.revision()).await);
    let pass = setup.pass(Timestamp::now() - SignedDuration::from_secs(1)).await;
    // The same pass already looks the call up in the history and finds it.
    assert_eq!((pass.uncertain, pass.reconciled), (1, 1), "{pass:?}");
    let (state, _, provider_call_id) = setup.state(id).await;
    assert_eq!(state, "dispatched");
    assert_eq!(
        provider_call_id.as_deref(),
        setup.provider.calls()[0]["call_id"].as_str()
    );
    assert_eq!(setup.dispatches(), 1);
    assert_eq!(setup.provider.calls().len(), 1, "one call was placed, never a second");
}

#[tokio::test]
async fn an_uncertain_dispatch_the_provider_never_placed_holds_the_reservation_until_resolved() {
    let setup = setup(false).await;
    setup.provider.set_dispatch(DispatchMode::FailWithoutPlacing);
    let id = reserved(setup.reserve(&setup.revision()).await);
    let pass = setup.pass(Timestamp::now()).await;
    assert_eq!((pass.uncertain, pass.reconciled), (1, 0), "{pass:?}");
    assert_eq!(setup.state(id).await.0, "uncertain");
    assert_eq!(
        setup.reserve(&setup.revision()).await,
        Reserve::Busy,
        "the reservation is held"
    );
    // Passes within the window look again and wait; none dispatches again.
    setup.provider.set_dispatch(DispatchMode::Accept);
    setup.pass(Timestamp::now()).await;
    assert_eq!(setup.state(id).await.0, "uncertain");
    let later = Timestamp::now() + SignedDuration::from_secs(steward_call_worker::RECONCILE_WINDOW_SECONDS + 5);
    let pass = setup.pass(later).await;
    assert_eq!(pass.reconciled, 1);
    assert_eq!(
        setup.state(id).await,
        ("not_placed".to_owned(), Some("not_found_at_provider".to_owned()), None)
    );
    assert_eq!(setup.dispatches(), 1, "never redialled");
    assert!(setup.provider.calls().is_empty());
    reserved(setup.reserve(&setup.revision()).await);
}

#[tokio::test]
async fn one_outbound_reservation_under_concurrent_approvals() {
    let setup = setup(false).await;
    let revision = setup.revision();
    let attempts: Vec<_> = (0..8).map(|_| setup.reserve(&revision)).collect();
    let outcomes = futures_util::future::join_all(attempts).await;
    let reserved_count = outcomes
        .iter()
        .filter(|outcome| matches!(outcome, Reserve::Reserved(_)))
        .count();
    let busy = outcomes.iter().filter(|outcome| **outcome == Reserve::Busy).count();
    assert_eq!((reserved_count, busy), (1, 7), "{outcomes:?}");

    // The same invocation reserving again gets its own call back.
    let invocation = Uuid::new_v4();
    let brief = json!({ "to": RECIPIENT, "purpose": "p", "may_say": "m" });
    sqlx::query("UPDATE call_records SET state = 'cancelled'")
        .execute(&setup.db.pool)
        .await
        .expect("release");
    let first = setup
        .reserving
        .reserve_outbound_call(&PrincipalId::owner(), invocation, RECIPIENT, &brief, &revision)
        .await
        .expect("reserve");
    let second = setup
        .reserving
        .reserve_outbound_call(&PrincipalId::owner(), invocation, RECIPIENT, &brief, &revision)
        .await
        .expect("reserve");
    assert_eq!(second, Reserve::Already(reserved(first)));
}

#[tokio::test]
async fn a_call_running_past_its_duration_is_ended_once() {
    let setup = setup(false).await;
    let id = reserved(setup.reserve(&setup.revision()).await);
    setup.pass(Timestamp::now()).await;
    let provider_call_id = setup.state(id).await.2.expect("dispatched");
    setup.provider.answer(&provider_call_id);
    let pass = setup.pass(Timestamp::now() + SignedDuration::from_mins(4)).await;
    assert_eq!(pass.terminated, 0, "within its five minutes");
    let late = Timestamp::now() + SignedDuration::from_mins(7);
    let pass = setup.pass(late).await;
    assert_eq!(pass.terminated, 1, "{pass:?}");
    let stops = |setup: &Setup| {
        setup
            .provider
            .requests()
            .iter()
            .filter(|r| r.path.ends_with("/stop"))
            .count()
    };
    assert_eq!(stops(&setup), 1);
    // Ended at the provider, it settles on the next pass; no second stop.
    let pass = setup.pass(late).await;
    assert_eq!((pass.recorded, pass.terminated), (1, 0), "{pass:?}");
    assert_eq!(stops(&setup), 1);
}

/// The maintenance role expires what the call worker settled (`store::retention`), with its own
/// login: row security lets it see the call, and its grants let it clear only the transcript and
/// summary.
#[tokio::test]
async fn transcripts_and_summaries_expire_after_thirty_days() {
    let setup = setup(false).await;
    let call_id = setup
        .provider
        .inbound_call("+15559990000", NUMBER, &[("user", "Hi")], "A short call.");
    setup.receipt(&call_id).await;
    setup.pass(Timestamp::now()).await;
    let ended: jiff_sqlx::Timestamp = sqlx::query_scalar("SELECT finished_at FROM call_records WHERE kind = 'call'")
        .fetch_one(&setup.db.pool)
        .await
        .expect("finished");
    let ended = ended.to_jiff();
    let maintenance = setup.db.store_as("maintenance").await;
    let retention = Retention::default();
    let expire = async |at: Timestamp| {
        maintenance
            .expire(Task::CallTranscripts, &retention, at, 100)
            .await
            .expect("expire")
    };
    assert_eq!(expire(ended + SignedDuration::from_hours(24 * 30 - 1)).await, 0);
    assert_eq!(
        setup.pass(ended + SignedDuration::from_hours(24 * 31)).await,
        Pass::default(),
        "the call worker leaves retention to the maintenance role"
    );
    assert_eq!(expire(ended + SignedDuration::from_hours(24 * 30 + 1)).await, 1);
    let (transcript, summary, expired, state): (Option<Value>, Option<String>, bool, String) = sqlx::query_as(
        "SELECT transcript, summary, expired_at IS NOT NULL, state FROM call_records WHERE kind = 'call'",
    )
    .fetch_one(&setup.db.pool)
    .await
    .expect("the call");
    assert_eq!(
        (transcript, summary, expired, state.as_str()),
        (None, None, true, "finished")
    );
    assert_eq!(expire(ended + SignedDuration::from_hours(24 * 40)).await, 0, "once");
}

#[test]
fn the_binary_refuses_unknown_log_levels() {
    testkit::roles::assert_refuses_an_unknown_log_level(env!("CARGO_BIN_EXE_steward-call-worker"));
}

#[tokio::test]
async fn a_pass_finishes_the_erasure_of_a_deleted_call_once() {
    let setup = setup(false).await;
    let call_id = setup
        .provider
        .inbound_call("+15559990000", NUMBER, &[("user", "Hi")], "A short call.");
    setup.receipt(&call_id).await;
    setup.pass(Timestamp::now()).await;
    let id: Uuid = sqlx::query_scalar("SELECT id FROM call_records WHERE kind = 'call'")
        .fetch_one(&setup.db.pool)
        .await
        .expect("the call");
    let api = setup.db.store_as("api").await;
    assert_eq!(
        api.delete_call(&PrincipalId::owner(), id).await.expect("delete"),
        store::DeleteCall::Deleted
    );
    assert_eq!(setup.worker.store.calls_to_redact(10).await.expect("due"), [id]);
    setup.pass(Timestamp::now()).await;
    assert!(setup.worker.store.calls_to_redact(10).await.expect("due").is_empty());
    let redacted: bool = sqlx::query_scalar("SELECT redacted_at IS NOT NULL FROM call_records WHERE id = $1")
        .bind(id)
        .fetch_one(&setup.db.pool)
        .await
        .expect("the call");
    assert!(redacted);
}

#[tokio::test]
async fn activation_pushes_only_the_public_profile_and_a_provider_that_keeps_a_member_blocks_it() {
    let setup = setup(false).await;
    // Private things the service holds: none may reach the number's settings.
    sqlx::query("INSERT INTO notes (id, principal_id, text) VALUES (gen_random_uuid(), 'owner', 'PRIVATE-NOTE-4711')")
        .execute(&setup.db.pool)
        .await
        .expect("a note");
    let settings = setup.worker.activate().await.expect("activated");
    let pushed: Vec<String> = setup
        .provider
        .requests()
        .iter()
        .filter(|request| request.method == "POST")
        .map(|request| request.body.to_string())
        .collect();
    assert_eq!(pushed.len(), 1);
    assert!(pushed[0].contains("Alex is a carpenter in Portland."), "{}", pushed[0]);
    assert!(!pushed[0].contains("PRIVATE-NOTE-4711"));
    assert_eq!(
        setup.provider.number(NUMBER).expect("the number")["prompt"].as_str(),
        Some(settings.prompt())
    );

    let setup = setup_with_ignored("pathway_id").await;
    let error = setup.worker.activate().await.expect_err("blocked");
    assert_eq!(
        error.to_string(),
        "calling cannot be activated: the call provider did not clear `pathway_id` on the number; activation is blocked until the number's settings can be cleared"
    );
}

async fn setup_with_ignored(member: &str) -> Setup {
    let setup = setup(false).await;
    setup.provider.ignore_member(member);
    setup
}

#[test]
fn the_binary_refuses_model_keys_the_owner_bearer_scopes_and_inline_keys() {
    let cases = [
        ("OPENAI_API_KEY", "sk-test", "a call role never holds a model key"),
        ("VEETBOT_OPENAI_KEY", "sk-test", "a call role never holds a model key"),
        (
            "BROWSER_CONTROL_CREDENTIAL_FILE",
            "/run/x",
            "never holds the browser control-plane credential",
        ),
        ("API_TOKEN_FILE", "/run/token", "never holds the owner's bearer token"),
        ("AUTH_SCOPES", "call.read", "AUTH_SCOPES must be empty"),
        ("CALLPROV_API_KEY", "k", "an inline call-provider key is refused"),
    ];
    for (variable, value, reason) in cases {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_steward-call-worker"))
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .env("STEWARD_DEV_ALLOW_ROOT", "1")
            .env("AGENT_CALL_ENABLED", "1")
            .env(variable, value)
            .output()
            .expect("run the call worker");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{variable}: {stderr}");
        assert!(
            stderr.starts_with("steward-call-worker: ") && stderr.contains(variable) && stderr.contains(reason),
            "{variable}: {stderr}"
        );
        assert!(
            !stderr.contains(value) || value.len() < 3,
            "the value is never repeated: {stderr}"
        );
    }
}

#[tokio::test]
async fn an_inbound_call_still_running_at_its_only_delivery_is_recorded_when_it_ends() {
    let setup = setup(true).await;
    let call_id = setup.provider.inbound_call_running("+15559990000", NUMBER);
    setup.receipt(&call_id).await;
    let pass = setup.pass(Timestamp::now()).await;
    assert_eq!((pass.pending, pass.recorded), (1, 0), "{pass:?}");
    setup
        .provider
        .finish(&call_id, &[("user", "It's Sam again")], "Sam called back.");
    // No second delivery: the receipt is looked at again on the next pass.
    let pass = setup.pass(Timestamp::now()).await;
    assert_eq!((pass.recorded, pass.notified), (1, 1), "{pass:?}");
    assert_eq!(setup.pass(Timestamp::now()).await, Pass::default(), "settled once");
}

#[tokio::test]
async fn a_dispatched_call_the_provider_lost_is_settled_without_its_result_and_frees_the_reservation() {
    let setup = setup(false).await;
    let id = reserved(setup.reserve(&setup.revision()).await);
    setup.pass(Timestamp::now()).await;
    let (state, _, provider_call_id) = setup.state(id).await;
    assert_eq!(state, "dispatched");
    setup.provider.forget(&provider_call_id.expect("the provider's id"));
    let pass = setup.pass(Timestamp::now()).await;
    assert_eq!(pass.abandoned, 1, "{pass:?}");
    let (state, failure): (String, Option<String>) =
        sqlx::query_as("SELECT state, failure FROM call_records WHERE id = $1")
            .bind(id)
            .fetch_one(&setup.db.pool)
            .await
            .expect("the call");
    assert_eq!(
        (state.as_str(), failure.as_deref()),
        ("finished", Some("result_unavailable"))
    );
    reserved(setup.reserve(&setup.revision()).await);
    assert_eq!(setup.dispatches(), 1, "never redialled");
}

#[tokio::test]
async fn a_stopped_call_the_provider_never_reports_ended_is_let_go_after_ten_minutes() {
    let setup = setup(false).await;
    let id = reserved(setup.reserve(&setup.revision()).await);
    setup.pass(Timestamp::now()).await;
    let provider_call_id = setup.state(id).await.2.expect("dispatched");
    setup.provider.answer(&provider_call_id);
    let late = Timestamp::now() + SignedDuration::from_mins(7);
    assert_eq!(setup.pass(late).await.terminated, 1);
    // The stand-in's stop ended the call; it reports it running again, as a provider that lost
    // the end would.
    setup.provider.reopen(&provider_call_id);
    let pass = setup.pass(Timestamp::now() + SignedDuration::from_mins(5)).await;
    assert_eq!(pass.abandoned, 0, "{pass:?}");
    let pass = setup.pass(Timestamp::now() + SignedDuration::from_mins(11)).await;
    assert_eq!(pass.abandoned, 1, "{pass:?}");
    assert_eq!(setup.state(id).await.0, "finished");
}

//! Schedules: idempotent creation pinned to an agent version, per-field validation, reads,
//! occurrences and cancel by expected revision.

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{TestApp, expect_problem, json};

/// The spec's smoke schedule, pinned to the agent version of a fresh session.
async fn definition(app: &TestApp) -> Value {
    let session = app.create_session(json!({})).await;
    json!({
        "title": "Morning inbox sweep",
        "instruction": "Read new mail and draft replies for approval.",
        "agent_id": session["agent_id"],
        "agent_version": session["agent_version"],
        "policy_profile": "default",
        "requested_scopes": ["mcp.mail_read.use", "mcp.mail_write.use"],
        "limits": { "max_steps": 8, "max_model_calls": 8, "max_tool_calls": 8, "max_cost": "1" },
        "run_timeout_seconds": 300,
        "cadence": { "kind": "DAILY", "local_time": "07:30:00", "timezone": "Europe/London" },
        "misfire_grace_seconds": 60,
        "max_consecutive_failures": 3
    })
}

async fn post(app: &TestApp, key: Option<&str>, body: &Value) -> reqwest::Response {
    let mut request = app.request(Method::POST, "/v1/schedules").json(body);
    if let Some(key) = key {
        request = request.header("idempotency-key", key);
    }
    request.send().await.expect("send")
}

#[tokio::test]
async fn creation_is_idempotent_and_pins_the_agent_version() {
    let app = TestApp::spawn().await;
    let body = definition(&app).await;
    let first = post(&app, Some("schedule-1"), &body).await;
    assert_eq!(first.status(), 201);
    let original = first.bytes().await.expect("body");
    let created: Value = serde_json::from_slice(&original).expect("json");
    let schedule = &created["schedule"];
    assert_eq!(schedule["revision"], 1);
    assert_eq!(schedule["state"], "active");
    assert_eq!(schedule["agent_version"], body["agent_version"]);
    assert_eq!(schedule["limits"]["max_cost"], "1");
    assert_eq!(
        schedule["cadence"],
        json!({ "kind": "DAILY", "local_time": "07:30:00", "timezone": "Europe/London" })
    );
    let next: jiff::Timestamp = schedule["next_fire_at"]
        .as_str()
        .expect("next fire")
        .parse()
        .expect("instant");
    assert!(next > jiff::Timestamp::now(), "the next firing is in the future");

    let again = post(&app, Some("schedule-1"), &body).await;
    assert_eq!(again.status(), 201);
    assert_eq!(again.headers()["idempotent-replayed"], "true");
    assert_eq!(again.bytes().await.expect("body"), original, "byte for byte");
    assert_eq!(app.count("schedules").await, 1);

    let mut changed = body.clone();
    changed["title"] = json!("Evening sweep");
    expect_problem(
        post(&app, Some("schedule-1"), &changed).await,
        422,
        "idempotency_key_reused",
    )
    .await;
    expect_problem(post(&app, None, &body).await, 400, "idempotency_key_required").await;

    let mut unknown = body.clone();
    unknown["agent_version"] = json!("0123456789abcdef0123456789abcdef");
    let problem = expect_problem(
        post(&app, Some("schedule-2"), &unknown).await,
        409,
        "unknown_agent_version",
    )
    .await;
    assert_eq!(problem["field"], "agent_version");
}

#[tokio::test]
async fn every_field_is_validated_and_named() {
    let app = TestApp::spawn().await;
    let valid = definition(&app).await;
    // (field named in the answer, JSON pointer to change, new value; `None` removes it).
    let cases: Vec<(&str, &str, Option<Value>)> = vec![
        ("surprise", "/surprise", Some(json!(1))),
        ("title", "/title", Some(json!(""))),
        ("instruction", "/instruction", None),
        ("policy_profile", "/policy_profile", Some(json!("permissive"))),
        (
            "requested_scopes[0]",
            "/requested_scopes",
            Some(json!(["mcp.mail_send_all.use"])),
        ),
        ("limits.max_steps", "/limits/max_steps", Some(json!(0))),
        ("limits.max_tool_calls", "/limits/max_tool_calls", Some(json!(-2))),
        ("limits.max_cost", "/limits/max_cost", Some(json!("1,5"))),
        ("limits.max_cost", "/limits/max_cost", Some(json!(1))),
        ("limits.extra", "/limits/extra", Some(json!(1))),
        ("run_timeout_seconds", "/run_timeout_seconds", Some(json!(0))),
        ("run_timeout_seconds", "/run_timeout_seconds", Some(json!(86_401))),
        ("agent_id", "/agent_id", Some(json!(""))),
        ("limits.max_model_calls", "/limits/max_model_calls", None),
        (
            "requested_scopes",
            "/requested_scopes",
            Some(json!("mcp.mail_read.use")),
        ),
        ("cadence", "/cadence", Some(json!("daily"))),
        ("cadence.kind", "/cadence/kind", Some(json!("WEEKLY"))),
        ("cadence.local_time", "/cadence/local_time", Some(json!("7:30"))),
        ("cadence.local_time", "/cadence/local_time", Some(json!("25:00:00"))),
        (
            "cadence.timezone",
            "/cadence/timezone",
            Some(json!("Mars/Olympus_Mons")),
        ),
        ("misfire_grace_seconds", "/misfire_grace_seconds", Some(json!(-1))),
        ("max_consecutive_failures", "/max_consecutive_failures", Some(json!(0))),
    ];
    for (index, (field, pointer, value)) in cases.into_iter().enumerate() {
        let mut body = valid.clone();
        let (parent, name) = pointer.rsplit_once('/').expect("pointer");
        let target = if parent.is_empty() {
            &mut body
        } else {
            body.pointer_mut(parent).expect("parent")
        };
        let object = target.as_object_mut().expect("object");
        match value {
            Some(value) => {
                object.insert(name.to_owned(), value);
            }
            None => {
                object.remove(name);
            }
        }
        let response = post(&app, Some(&format!("bad-{index}")), &body).await;
        let problem = expect_problem(response, 422, "validation_failed").await;
        assert_eq!(problem["field"], field, "{problem}");
    }
    assert_eq!(app.count("schedules").await, 0, "nothing invalid was stored");
}

#[tokio::test]
async fn schedules_are_listed_read_and_link_their_occurrences_to_runs() {
    let app = TestApp::spawn().await;
    let body = definition(&app).await;
    let (_, created) = json(post(&app, Some("s-1"), &body).await).await;
    let id = created["schedule"]["id"].as_str().expect("id").to_owned();

    let (_, list) = app.get_json("/v1/schedules").await;
    assert_eq!(list["schedules"].as_array().map(Vec::len), Some(1));
    let (status, read) = app.get_json(&format!("/v1/schedules/{id}")).await;
    assert_eq!((status, &read["schedule"]), (200, &created["schedule"]));
    let (_, occurrences) = app.get_json(&format!("/v1/schedules/{id}/occurrences")).await;
    assert_eq!(occurrences, json!({ "occurrences": [] }));

    // An occurrence the schedule role recorded, with its run.
    let session = app.new_session().await;
    let run: uuid::Uuid = sqlx::query_scalar(
        "INSERT INTO runs (id, session_id, state) VALUES (gen_random_uuid(), $1::uuid, 'queued') RETURNING id",
    )
    .bind(&session)
    .fetch_one(&app.db.pool)
    .await
    .expect("run");
    sqlx::query(
        "INSERT INTO schedule_occurrences (id, schedule_id, scheduled_for, schedule_revision, state, session_id, run_id)
         VALUES (gen_random_uuid(), $1::uuid, now(), 1, 'started', $2::uuid, $3)",
    )
    .bind(&id)
    .bind(&session)
    .bind(run)
    .execute(&app.db.pool)
    .await
    .expect("occurrence");
    let (_, occurrences) = app.get_json(&format!("/v1/schedules/{id}/occurrences")).await;
    assert_eq!(occurrences["occurrences"][0]["run_id"], run.to_string());
    assert_eq!(occurrences["occurrences"][0]["state"], "started");

    let missing = format!("/v1/schedules/{}", uuid::Uuid::new_v4());
    expect_problem(app.send(Method::GET, &missing).await, 404, "schedule_not_found").await;
}

#[tokio::test]
async fn cancel_needs_the_current_revision() {
    let app = TestApp::spawn().await;
    let body = definition(&app).await;
    let (_, created) = json(post(&app, Some("c-1"), &body).await).await;
    let id = created["schedule"]["id"].as_str().expect("id").to_owned();
    let delete = |revision: &str| {
        app.request(
            Method::DELETE,
            &format!("/v1/schedules/{id}?expected_revision={revision}"),
        )
        .send()
    };

    let problem = expect_problem(delete("7").await.expect("send"), 409, "revision_mismatch").await;
    assert_eq!(problem["revision"], 1);
    expect_problem(
        app.request(Method::DELETE, &format!("/v1/schedules/{id}"))
            .send()
            .await
            .expect("send"),
        400,
        "invalid_request",
    )
    .await;

    let (status, cancelled) = json(delete("1").await.expect("send")).await;
    assert_eq!(status, 200);
    assert_eq!(
        (
            cancelled["schedule"]["state"].as_str(),
            cancelled["schedule"]["revision"].as_i64()
        ),
        (Some("cancelled"), Some(2))
    );
    assert_eq!(
        cancelled["schedule"]["next_fire_at"],
        Value::Null,
        "a cancelled schedule never fires again"
    );
    assert_eq!(
        delete("1").await.expect("send").status(),
        200,
        "a retried cancel whose answer was lost succeeds"
    );
    assert_eq!(
        delete("2").await.expect("send").status(),
        200,
        "cancelling again at the current revision changes nothing"
    );
    expect_problem(delete("0").await.expect("send"), 409, "revision_mismatch").await;

    // A cancelled schedule stays readable, with its state and its occurrences: the owner's
    // record of what it did. The list leaves it out unless asked.
    let (status, read) = app.get_json(&format!("/v1/schedules/{id}")).await;
    assert_eq!(status, 200);
    assert_eq!(read["schedule"]["state"], "cancelled");
    assert_eq!(read["schedule"]["next_fire_at"], serde_json::Value::Null);
    let (status, occurrences) = app.get_json(&format!("/v1/schedules/{id}/occurrences")).await;
    assert_eq!(status, 200);
    assert!(occurrences["occurrences"].is_array());
    let (_, list) = app.get_json("/v1/schedules").await;
    assert_eq!(list["schedules"], serde_json::json!([]), "the list leaves it out");
    let (_, all) = app.get_json("/v1/schedules?include_cancelled=true").await;
    assert_eq!(all["schedules"][0]["id"].as_str(), Some(id.as_str()));
    assert_eq!(all["schedules"][0]["state"], "cancelled");
    let (_, not) = app.get_json("/v1/schedules?include_cancelled=false").await;
    assert_eq!(not["schedules"], serde_json::json!([]));
    let bad = app.send(Method::GET, "/v1/schedules?include_cancelled=maybe").await;
    expect_problem(bad, 400, "invalid_request").await;
}

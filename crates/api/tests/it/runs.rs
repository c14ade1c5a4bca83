//! Message submit: idempotency, one active run per session, attachments, cancel.

use std::sync::Arc;

use reqwest::Method;
use serde_json::{Value, json};

use crate::support::{TestApp, expect_problem, json};

/// The session's stored events (the first ten) as the stream frames them.
async fn stored_frames(app: &TestApp, session: &str) -> Vec<Value> {
    let events = app
        .store()
        .events_after(
            &domain::ids::PrincipalId::owner(),
            domain::ids::SessionId::parse(session).expect("id"),
            0,
            10,
        )
        .await
        .expect("events");
    events
        .into_iter()
        .map(|event| serde_json::to_value(event.into_frame()).expect("json"))
        .collect()
}

#[tokio::test]
async fn a_message_starts_one_queued_run_and_titles_the_session() {
    let app = TestApp::spawn().await;
    let session = app.new_session().await;
    let response = app
        .submit(&session, "k-1", json!({ "text": "\n  Plan a trip to Lisbon\nin May" }))
        .await;
    assert_eq!(response.status(), 202);
    assert!(response.headers().get("idempotent-replayed").is_none());
    let (_, body) = json(response).await;
    let run = &body["run"];
    assert_eq!(
        (run["state"].as_str(), run["status"].as_str()),
        (Some("queued"), Some("working"))
    );
    assert_eq!(run["session_id"], session.as_str());
    assert_eq!(run["message_seq"], 1);
    assert_eq!(run["limits"]["max_cost"], "1");
    assert_eq!(run["limits"]["run_timeout_seconds"], 300);

    let (_, read) = app
        .get_json(&format!("/v1/runs/{}", run["run_id"].as_str().expect("id")))
        .await;
    assert_eq!(read, *run);
    let (_, indexed) = app.get_json(&format!("/v1/sessions/{session}")).await;
    assert_eq!(
        indexed["title"], "Plan a trip to Lisbon",
        "the first line of the first message"
    );
    assert_eq!(indexed["last_run_id"], run["run_id"]);

    let frames = stored_frames(&app, &session).await;
    assert_eq!(frames.len(), 1);
    let frame = &frames[0];
    assert_eq!(frame["kind"], "user.message.created");
    assert_eq!(frame["payload"]["message"]["text"], "Plan a trip to Lisbon\nin May");
    assert_eq!(frame["payload"]["run_id"], run["run_id"]);
}

#[tokio::test]
async fn same_key_and_body_replays_the_original_response_and_starts_nothing() {
    let app = TestApp::spawn().await;
    let session = app.new_session().await;
    let first = app.submit(&session, "retry-me", json!({ "text": "hello" })).await;
    assert_eq!(first.status(), 202);
    let original = first.bytes().await.expect("body");
    for _ in 0..200 {
        let again = app.submit(&session, "retry-me", json!({ "text": "hello" })).await;
        assert_eq!(again.status(), 202);
        assert_eq!(again.headers()["idempotent-replayed"], "true");
        assert_eq!(again.bytes().await.expect("body"), original, "byte for byte");
    }
    assert_eq!(app.count("runs").await, 1);
    assert_eq!(app.count("events").await, 1);

    let reused = app.submit(&session, "retry-me", json!({ "text": "hello!" })).await;
    expect_problem(reused, 422, "idempotency_key_reused").await;
    let other_session = app.new_session().await;
    let elsewhere = app.submit(&other_session, "retry-me", json!({ "text": "hello" })).await;
    expect_problem(elsewhere, 422, "idempotency_key_reused").await;
}

#[tokio::test]
async fn concurrent_requests_with_one_key_start_one_run() {
    let app = Arc::new(TestApp::spawn().await);
    let session = app.new_session().await;
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let (app, session) = (app.clone(), session.clone());
        tasks.push(tokio::spawn(async move {
            let response = app.submit(&session, "same-key", json!({ "text": "once" })).await;
            json(response).await
        }));
    }
    let mut accepted = Vec::new();
    for task in tasks {
        let (status, body) = task.await.expect("task");
        match status {
            202 => accepted.push(body),
            409 => assert_eq!(body["code"], "idempotency_key_in_flight", "{body}"),
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert!(!accepted.is_empty());
    assert!(
        accepted.windows(2).all(|pair| pair[0] == pair[1]),
        "every acceptance is the same response"
    );
    assert_eq!(app.count("runs").await, 1);
    // After the dust settles, a retry replays.
    let (status, body) = json(app.submit(&session, "same-key", json!({ "text": "once" })).await).await;
    assert_eq!((status, &body), (202, &accepted[0]));
}

#[tokio::test]
async fn concurrent_messages_to_one_session_start_exactly_one_run() {
    let app = Arc::new(TestApp::spawn().await);
    let session = app.new_session().await;
    let mut tasks = Vec::new();
    for index in 0..50 {
        let (app, session) = (app.clone(), session.clone());
        tasks.push(tokio::spawn(async move {
            json(
                app.submit(
                    &session,
                    &format!("message-{index}"),
                    json!({ "text": format!("message {index}") }),
                )
                .await,
            )
            .await
        }));
    }
    let mut winners = Vec::new();
    let mut named = Vec::new();
    for task in tasks {
        let (status, body) = task.await.expect("task");
        match status {
            202 => winners.push(body["run"]["run_id"].clone()),
            409 => {
                assert_eq!(body["code"], "active_run_exists", "{body}");
                named.push(body["run_id"].clone());
            }
            other => panic!("unexpected {other}: {body}"),
        }
    }
    assert_eq!(winners.len(), 1);
    assert_eq!(named.len(), 49);
    assert!(
        named.iter().all(|run| *run == winners[0]),
        "every refusal names the active run"
    );
    assert_eq!(app.count("runs").await, 1);
    assert_eq!(app.count("events").await, 1, "refused messages leave no event");
}

#[tokio::test]
async fn messages_may_be_attachments_alone_and_must_name_artifacts_of_the_session() {
    let app = TestApp::spawn().await;
    let session = app.new_session().await;
    let upload = app
        .request(
            Method::POST,
            &format!("/v1/sessions/{session}/artifacts?filename=scan.pdf"),
        )
        .header("content-type", "application/pdf")
        .body("%PDF-1.7")
        .send()
        .await
        .expect("send");
    let (_, artifact) = json(upload).await;
    let id = artifact["artifact_id"].clone();

    let unknown = app
        .submit(&session, "a-1", json!({ "attachments": [uuid::Uuid::new_v4()] }))
        .await;
    let body = expect_problem(unknown, 409, "unknown_artifact").await;
    assert_eq!(body["field"], "attachments");
    let empty = app.submit(&session, "a-2", json!({ "text": "   " })).await;
    expect_problem(empty, 422, "validation_failed").await;
    let missing_key = app
        .request(Method::POST, &format!("/v1/sessions/{session}/messages"))
        .json(&json!({ "text": "hi" }))
        .send()
        .await
        .expect("send");
    expect_problem(missing_key, 400, "idempotency_key_required").await;
    let nowhere = app
        .submit(&uuid::Uuid::new_v4().to_string(), "a-3", json!({ "text": "hi" }))
        .await;
    expect_problem(nowhere, 404, "session_not_found").await;

    let accepted = app.submit(&session, "a-4", json!({ "attachments": [id] })).await;
    assert_eq!(accepted.status(), 202);
    let frame = &stored_frames(&app, &session).await[0];
    let message = &frame["payload"]["message"];
    assert_eq!(message["text"], Value::Null);
    assert_eq!(message["attachments"][0]["filename"], "scan.pdf");
    assert_eq!(message["attachments"][0]["media_type"], "application/pdf");
}

#[tokio::test]
async fn cancel_ends_an_active_run_once() {
    let app = TestApp::spawn().await;
    let session = app.new_session().await;
    let (_, accepted) = json(app.submit(&session, "c-1", json!({ "text": "go" })).await).await;
    let run = accepted["run"]["run_id"].as_str().expect("id").to_owned();

    let cancelled = app
        .request(Method::POST, &format!("/v1/runs/{run}/cancel"))
        .send()
        .await
        .expect("send");
    let (status, body) = json(cancelled).await;
    assert_eq!(status, 200);
    assert_eq!(
        (body["state"].as_str(), body["reason"].as_str()),
        (Some("cancelled"), Some("requested"))
    );
    assert!(body["finished_at"].is_string());

    let again = app
        .request(Method::POST, &format!("/v1/runs/{run}/cancel"))
        .send()
        .await
        .expect("send");
    let problem = expect_problem(again, 409, "run_not_active").await;
    assert_eq!(problem["state"], "cancelled");
    let unknown = app
        .request(Method::POST, &format!("/v1/runs/{}/cancel", uuid::Uuid::new_v4()))
        .send()
        .await
        .expect("send");
    expect_problem(unknown, 404, "run_not_found").await;

    // The session is free again.
    assert_eq!(
        app.submit(&session, "c-2", json!({ "text": "next" })).await.status(),
        202
    );
}

#[tokio::test]
async fn a_held_key_is_in_flight_and_attachments_keep_their_order_and_their_session() {
    let app = TestApp::spawn().await;
    let (session, other) = (app.new_session().await, app.new_session().await);
    let upload = |session: String, name: &'static str| {
        let request = app
            .request(
                Method::POST,
                &format!("/v1/sessions/{session}/artifacts?filename={name}"),
            )
            .header("content-type", "text/plain")
            .body(name);
        async move { json(request.send().await.expect("send")).await.1["artifact_id"].clone() }
    };
    let (first, second) = (
        upload(session.clone(), "a.txt").await,
        upload(session.clone(), "b.txt").await,
    );
    let foreign = upload(other.clone(), "c.txt").await;

    // Another transaction holds the key's lock (the lock space of the submit): in flight.
    let mut holder = app.db.pool.begin().await.expect("begin");
    sqlx::query("SELECT pg_advisory_xact_lock(hashtextextended('owner' || chr(31) || 'held', 7))")
        .execute(&mut *holder)
        .await
        .expect("lock");
    let busy = app.submit(&session, "held", json!({ "text": "hi" })).await;
    expect_problem(busy, 409, "idempotency_key_in_flight").await;
    holder.rollback().await.expect("rollback");

    // The first artifact that is not this session's is named, in the order sent.
    let unknown = app
        .submit(
            &session,
            "mixed",
            json!({ "attachments": [first, foreign, uuid::Uuid::new_v4()] }),
        )
        .await;
    let body = expect_problem(unknown, 409, "unknown_artifact").await;
    assert!(
        body["detail"]
            .as_str()
            .expect("detail")
            .contains(foreign.as_str().expect("id")),
        "{body}"
    );
    let gone = app
        .submit(
            &uuid::Uuid::new_v4().to_string(),
            "gone",
            json!({ "attachments": [first] }),
        )
        .await;
    expect_problem(gone, 404, "session_not_found").await;

    let accepted = app
        .submit(
            &session,
            "held",
            json!({ "text": "hi", "attachments": [second, first] }),
        )
        .await;
    let (status, accepted) = json(accepted).await;
    assert_eq!(status, 202, "{accepted}");
    let (_, read) = app
        .get_json(&format!("/v1/runs/{}", accepted["run"]["run_id"].as_str().expect("id")))
        .await;
    assert_eq!(read, accepted["run"], "the response is the run as stored");
    let frame = &stored_frames(&app, &session).await[0];
    let names: Vec<&str> = frame["payload"]["message"]["attachments"]
        .as_array()
        .expect("attachments")
        .iter()
        .map(|attachment| attachment["filename"].as_str().expect("name"))
        .collect();
    assert_eq!(names, ["b.txt", "a.txt"], "in the order sent");
    assert_eq!(app.count("runs").await, 1, "refusals started nothing");
}

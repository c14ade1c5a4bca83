//! The owner's call routes over call records written as the call worker and the worker write
//! them: mounted only with calling, keyset pages newest first, a call with its transcript,
//! cancelling only an approved call, deleting only a settled call (its content gone at once),
//! and `call_finished` notifications owned through their call.

use domain::call::CallDirection;
use domain::ids::PrincipalId;
use reqwest::Method;
use serde_json::{Value, json};
use store::{CallResult, Reserve, Store};

use crate::support::{Env, TestApp, expect_problem, json};

async fn app() -> TestApp {
    TestApp::spawn_with(Env::default().set("AGENT_CALL_ENABLED", "1")).await
}

/// An ended inbound call, recorded as the call worker records it.
async fn inbound(call: &Store, provider_call_id: &str, from: &str, notify: bool) -> uuid::Uuid {
    let result = CallResult {
        provider_call_id: provider_call_id.into(),
        direction: CallDirection::Inbound,
        counterpart: Some(from.into()),
        reference: None,
        transcript: json!([
            { "user": "assistant", "text": "Hello, you've reached Alex." },
            { "user": "user", "text": "It's Sam about the table." }
        ]),
        summary: Some("Sam called about the table.".into()),
        answered_by: Some("human".into()),
        duration_seconds: Some(75),
    };
    match call.settle_call_result(&result, notify).await.expect("settle") {
        store::Settled::Recorded { call, .. } => call,
        other => panic!("not recorded: {other:?}"),
    }
}

async fn outbound(worker: &Store) -> uuid::Uuid {
    let brief = json!({ "to": "+15557654321", "purpose": "Confirm Tuesday.", "may_say": "Tuesday 9 to 12." });
    match worker
        .reserve_outbound_call(
            &PrincipalId::owner(),
            uuid::Uuid::new_v4(),
            "+15557654321",
            &brief,
            &"a".repeat(64),
        )
        .await
        .expect("reserve")
    {
        Reserve::Reserved(id) => id,
        other => panic!("not reserved: {other:?}"),
    }
}

#[tokio::test]
async fn the_call_routes_exist_only_with_calling() {
    let off = TestApp::spawn_with(Env::default()).await;
    expect_problem(off.send(Method::GET, "/v1/calls").await, 404, "not_found").await;
    let on = app().await;
    let (status, page) = json(on.send(Method::GET, "/v1/calls").await).await;
    assert_eq!((status, page), (200, json!({ "calls": [], "next_cursor": null })));
}

#[tokio::test]
async fn calls_list_newest_first_by_cursor_and_read_with_their_transcript() {
    let app = app().await;
    let call = app.db.store_as("call").await;
    let first = inbound(&call, "call-1", "+15550000001", false).await;
    let second = inbound(&call, "call-2", "+15550000002", false).await;
    let third = inbound(&call, "call-3", "+15550000003", false).await;

    let (status, page) = json(app.send(Method::GET, "/v1/calls?limit=2").await).await;
    assert_eq!(status, 200);
    let ids: Vec<&str> = page["calls"]
        .as_array()
        .expect("calls")
        .iter()
        .map(|c| c["call_id"].as_str().expect("id"))
        .collect();
    assert_eq!(ids, [third.to_string(), second.to_string()]);
    let cursor = page["next_cursor"].as_str().expect("a next page");
    let (_, rest) = json(
        app.send(Method::GET, &format!("/v1/calls?limit=2&cursor={cursor}"))
            .await,
    )
    .await;
    assert_eq!(rest["calls"][0]["call_id"], json!(first.to_string()));
    assert_eq!(rest["next_cursor"], Value::Null);
    expect_problem(
        app.send(Method::GET, "/v1/calls?cursor=forged").await,
        400,
        "invalid_cursor",
    )
    .await;

    let (status, one) = json(app.send(Method::GET, &format!("/v1/calls/{first}")).await).await;
    assert_eq!(status, 200);
    assert_eq!(one["call"]["direction"], json!("inbound"));
    assert_eq!(one["call"]["state"], json!("finished"));
    assert_eq!(one["call"]["counterpart"], json!("+15550000001"));
    assert_eq!(one["call"]["duration_seconds"], json!(75));
    assert_eq!(
        one["transcript"],
        json!([
            { "speaker": "assistant", "text": "Hello, you've reached Alex." },
            { "speaker": "other", "text": "It's Sam about the table." }
        ])
    );
    assert_eq!(one["summary"], json!("Sam called about the table."));
    assert_eq!(one["brief"], Value::Null);
    expect_problem(
        app.send(Method::GET, &format!("/v1/calls/{}", uuid::Uuid::new_v4()))
            .await,
        404,
        "call_not_found",
    )
    .await;
    expect_problem(
        app.send(Method::GET, "/v1/calls/not-an-id").await,
        404,
        "call_not_found",
    )
    .await;
}

#[tokio::test]
async fn only_an_approved_outbound_call_can_be_cancelled() {
    let app = app().await;
    let worker = app.db.store_as("worker").await;
    let id = outbound(&worker).await;
    let (_, one) = json(app.send(Method::GET, &format!("/v1/calls/{id}")).await).await;
    assert_eq!(one["brief"]["may_say"], json!("Tuesday 9 to 12."));
    assert_eq!(one["revision"], json!("a".repeat(64)));
    assert_eq!(
        app.send(Method::POST, &format!("/v1/calls/{id}/cancel")).await.status(),
        204
    );
    let (_, one) = json(app.send(Method::GET, &format!("/v1/calls/{id}")).await).await;
    assert_eq!(one["call"]["state"], json!("cancelled"));
    expect_problem(
        app.send(Method::POST, &format!("/v1/calls/{id}/cancel")).await,
        409,
        "call_not_cancellable",
    )
    .await;
    // The reservation was released.
    outbound(&worker).await;
    let finished = inbound(&app.db.store_as("call").await, "call-9", "+15550000009", false).await;
    expect_problem(
        app.send(Method::POST, &format!("/v1/calls/{finished}/cancel")).await,
        409,
        "call_not_cancellable",
    )
    .await;
}

#[tokio::test]
async fn deleting_removes_a_settled_call_at_once_and_refuses_one_in_progress() {
    let app = app().await;
    let reserved = outbound(&app.db.store_as("worker").await).await;
    expect_problem(
        app.send(Method::DELETE, &format!("/v1/calls/{reserved}")).await,
        409,
        "call_active",
    )
    .await;

    let id = inbound(&app.db.store_as("call").await, "call-5", "+15550000005", false).await;
    assert_eq!(app.send(Method::DELETE, &format!("/v1/calls/{id}")).await.status(), 204);
    expect_problem(
        app.send(Method::GET, &format!("/v1/calls/{id}")).await,
        404,
        "call_not_found",
    )
    .await;
    let (_, page) = json(app.send(Method::GET, "/v1/calls").await).await;
    assert!(
        page["calls"]
            .as_array()
            .expect("calls")
            .iter()
            .all(|call| call["call_id"] != json!(id.to_string()))
    );
    let (transcript, summary, counterpart, deleted): (Option<Value>, Option<String>, Option<String>, bool) =
        sqlx::query_as(
            "SELECT transcript, summary, counterpart, deleted_at IS NOT NULL FROM call_records WHERE id = $1",
        )
        .bind(id)
        .fetch_one(&app.db.pool)
        .await
        .expect("the row");
    assert_eq!((transcript, summary, counterpart, deleted), (None, None, None, true));
    expect_problem(
        app.send(Method::DELETE, &format!("/v1/calls/{id}")).await,
        404,
        "call_not_found",
    )
    .await;
}

#[tokio::test]
async fn a_finished_call_notification_is_the_owners_and_names_only_its_call() {
    let app = TestApp::spawn_with(
        Env::default()
            .set("AGENT_CALL_ENABLED", "1")
            .set("AGENT_CALL_NOTIFICATIONS_ENABLED", "1")
            .set("AGENT_NOTIFICATION_API_ENABLED", "1")
            .set("AGENT_NOTIFICATION_DISPATCH_ENABLED", "1"),
    )
    .await;
    app.db.grant_call_notifications().await;
    let id = inbound(&app.db.store_as("call").await, "call-7", "+15550000007", true).await;
    let (status, pending) = json(app.send(Method::GET, "/v1/notifications").await).await;
    assert_eq!(status, 200);
    let notifications = pending["notifications"].as_array().expect("notifications");
    assert_eq!(notifications.len(), 1, "{pending}");
    assert_eq!(notifications[0]["kind"], json!("call_finished"));
    let text = notifications[0].to_string();
    assert!(text.contains(&id.to_string()), "{text}");
    assert!(!text.contains("Sam") && !text.contains("+1555"), "content-free: {text}");
}

//! Notifications and devices: flag-gated, pending for offline recovery, acknowledged across
//! devices, obsolete once resolved; devices register idempotently and revoke.

use reqwest::Method;
use serde_json::json;

use crate::support::{Env, TestApp, expect_problem, json};

fn enabled() -> Env {
    Env::default()
        .set("AGENT_NOTIFICATION_API_ENABLED", "1")
        .set("AGENT_NOTIFICATION_DISPATCH_ENABLED", "1")
}

#[tokio::test]
async fn the_routes_exist_only_with_the_notification_flags() {
    let off = TestApp::spawn().await;
    for (method, path) in [(Method::GET, "/v1/notifications"), (Method::POST, "/v1/devices")] {
        expect_problem(off.request(method, path).send().await.expect("send"), 404, "not_found").await;
    }
    let on = TestApp::spawn_with(enabled()).await;
    expect_problem(
        on.client.get(on.url("/v1/notifications")).send().await.expect("send"),
        401,
        "unauthenticated",
    )
    .await;
}

#[tokio::test]
async fn pending_notifications_carry_ids_only_and_settle_on_acknowledgement_or_resolution() {
    let app = TestApp::spawn_with(enabled()).await;
    let session = app.new_session().await;
    // Two raised notifications (as the worker raises them with an approval), one of them
    // resolved meanwhile.
    for obsolete in [false, true] {
        sqlx::query(
            "INSERT INTO notification_outbox (id, kind, session_id, deliver_after, obsolete_at)
             VALUES (gen_random_uuid(), 'question', $1::uuid, now(), CASE WHEN $2 THEN now() END)",
        )
        .bind(&session)
        .bind(obsolete)
        .execute(&app.db.pool)
        .await
        .expect("outbox row");
    }
    let (status, pending) = app.get_json("/v1/notifications").await;
    assert_eq!(status, 200);
    let items = pending["notifications"].as_array().expect("list");
    assert_eq!(items.len(), 1, "obsolete notifications are not pending");
    let payload = &items[0]["payload"];
    assert_eq!(payload["v"], 1);
    assert_eq!(payload["kind"], "question");
    assert_eq!(payload["session_id"], session.as_str());
    let keys: Vec<&str> = payload
        .as_object()
        .expect("payload")
        .keys()
        .map(String::as_str)
        .collect();
    assert!(
        keys.iter()
            .all(|key| ["v", "kind", "notification_id", "session_id"].contains(key)),
        "{keys:?}"
    );

    let id = items[0]["notification_id"].as_str().expect("id").to_owned();
    let acknowledge = || {
        app.request(Method::POST, &format!("/v1/notifications/{id}/acknowledge"))
            .send()
    };
    assert_eq!(acknowledge().await.expect("send").status(), 204);
    assert_eq!(
        acknowledge().await.expect("send").status(),
        204,
        "acknowledging again is harmless"
    );
    let (_, pending) = app.get_json("/v1/notifications").await;
    assert_eq!(
        pending,
        json!({ "notifications": [] }),
        "acknowledged on one device, settled on all"
    );
    let unknown = format!("/v1/notifications/{}/acknowledge", uuid::Uuid::new_v4());
    expect_problem(app.send(Method::POST, &unknown).await, 404, "notification_not_found").await;
}

#[tokio::test]
async fn devices_register_idempotently_rotate_and_revoke() {
    let app = TestApp::spawn_with(enabled()).await;
    let token = "a".repeat(64);
    let register = |token: String, environment: &'static str| {
        app.request(Method::POST, "/v1/devices")
            .json(&json!({ "client_device_id": "phone-1", "push_token": token, "environment": environment }))
            .send()
    };
    let (status, first) = json(register(token.clone(), "sandbox").await.expect("send")).await;
    assert_eq!(
        (status, first["environment"].as_str(), first["active"].as_bool()),
        (201, Some("sandbox"), Some(true))
    );
    let (status, again) = json(register(token.clone(), "sandbox").await.expect("send")).await;
    assert_eq!(
        (status, &again["device_id"]),
        (200, &first["device_id"]),
        "the same registration again"
    );
    let (status, rotated) = json(register("b".repeat(64), "production").await.expect("send")).await;
    assert_eq!((status, rotated["environment"].as_str()), (200, Some("production")));
    let stored: (String, i64) = sqlx::query_as("SELECT push_token, count(*) OVER () FROM devices")
        .fetch_one(&app.db.pool)
        .await
        .expect("device");
    assert_eq!(stored, ("b".repeat(64), 1), "rotation replaced the token");

    let bad = app
        .request(Method::POST, "/v1/devices")
        .json(&json!({ "client_device_id": "phone-1", "push_token": "not hex", "environment": "sandbox" }))
        .send()
        .await
        .expect("send");
    assert_eq!(
        expect_problem(bad, 422, "validation_failed").await["field"],
        "push_token"
    );
    let bad = register(token, "staging").await.expect("send");
    assert_eq!(
        expect_problem(bad, 422, "validation_failed").await["field"],
        "environment"
    );

    assert_eq!(app.send(Method::DELETE, "/v1/devices/phone-1").await.status(), 204);
    let active: bool = sqlx::query_scalar("SELECT active FROM devices")
        .fetch_one(&app.db.pool)
        .await
        .expect("device");
    assert!(!active);
    expect_problem(
        app.send(Method::DELETE, "/v1/devices/tablet-9").await,
        404,
        "device_not_found",
    )
    .await;
}

/// A VAPID public key as the notify role's key would give it (any P-256 point will do here: the
/// API only hands it to browsers).
const WEB_PUSH_KEY: &str = "BCVxsr7N_eNgVRqvHtD0zTZsEc6-VV-JvLexhqUzORcxaOzi6-AYWXvTBHm4bjyPjs7Vd8pZGH6SRpkNtoIAiw4";

fn web_push_subscription(client: &str) -> serde_json::Value {
    json!({
        "client_device_id": client,
        "endpoint": "https://push.example.test/send/abc123",
        "p256dh": "BLn9b-VR0ca83knDNZ32dCHGyjJp-1riX9ZTN40MqV8K_LpQmLqxC_DoHvqvFXO_nGdAB4W9dogZb_sM-uV4JbY",
        "auth": "_ordMnz7uTCmrpBTeUV4Bw",
    })
}

#[tokio::test]
async fn a_web_client_subscribes_with_the_servers_key_and_registers_its_subscription_as_a_device() {
    let app = TestApp::spawn_with(enabled().set("WEB_PUSH_PUBLIC_KEY", WEB_PUSH_KEY)).await;
    let (status, key) = app.get_json("/v1/devices/web-push").await;
    assert_eq!((status, key), (200, json!({ "application_server_key": WEB_PUSH_KEY })));

    let register = |body: serde_json::Value| app.request(Method::POST, "/v1/devices/web-push").json(&body).send();
    let (status, device) = json(register(web_push_subscription("browser-1")).await.expect("send")).await;
    assert_eq!(status, 201);
    assert_eq!(device["kind"], "web_push");
    assert!(
        device.get("environment").is_none(),
        "a subscription has no APNs environment: {device}"
    );
    let (status, again) = json(register(web_push_subscription("browser-1")).await.expect("send")).await;
    assert_eq!(
        (status, &again["device_id"]),
        (200, &device["device_id"]),
        "the same subscription again"
    );

    // A changed subscription replaces the old one on the same device.
    let mut changed = web_push_subscription("browser-1");
    changed["endpoint"] = json!("https://push.example.test/send/rotated");
    assert_eq!(register(changed).await.expect("send").status(), 200);
    let stored: (String, String, Option<String>, String, String) =
        sqlx::query_as("SELECT kind, push_token, environment, web_push_p256dh, web_push_auth FROM devices")
            .fetch_one(&app.db.pool)
            .await
            .expect("device");
    assert_eq!(
        stored,
        (
            "web_push".to_owned(),
            "https://push.example.test/send/rotated".to_owned(),
            None,
            web_push_subscription("")["p256dh"].as_str().expect("key").to_owned(),
            "_ordMnz7uTCmrpBTeUV4Bw".to_owned(),
        )
    );

    for (field, value) in [
        ("endpoint", json!("http://push.example.test/send/abc")),
        ("endpoint", json!("https://user:pw@push.example.test/send")),
        ("endpoint", json!("not a url")),
        ("p256dh", json!("AAAA")),
        ("auth", json!("_ordMnz7uTCmrpBTeUV4")),
        ("client_device_id", json!("has space")),
    ] {
        let mut bad = web_push_subscription("browser-2");
        bad[field] = value;
        let answer = register(bad).await.expect("send");
        assert_eq!(
            expect_problem(answer, 422, "validation_failed").await["field"],
            field,
            "{field}"
        );
    }
    let mut unknown = web_push_subscription("browser-2");
    unknown["expirationTime"] = json!(null);
    expect_problem(register(unknown).await.expect("send"), 422, "validation_failed").await;

    // Forgetting the connection revokes it like any device.
    assert_eq!(app.send(Method::DELETE, "/v1/devices/browser-1").await.status(), 204);
    let active: bool = sqlx::query_scalar("SELECT active FROM devices")
        .fetch_one(&app.db.pool)
        .await
        .expect("device");
    assert!(!active);
}

#[tokio::test]
async fn without_a_vapid_key_web_push_is_unavailable_and_a_bad_key_stops_the_api() {
    let app = TestApp::spawn_with(enabled()).await;
    expect_problem(
        app.send(Method::GET, "/v1/devices/web-push").await,
        404,
        "web_push_unavailable",
    )
    .await;
    let answer = app
        .request(Method::POST, "/v1/devices/web-push")
        .json(&web_push_subscription("browser-1"))
        .send()
        .await
        .expect("send");
    expect_problem(answer, 404, "web_push_unavailable").await;

    assert_eq!(
        api::config::web_push_public_key(WEB_PUSH_KEY).ok().as_deref(),
        Some(WEB_PUSH_KEY)
    );
    for bad in ["not base64!", "AAAA", &WEB_PUSH_KEY.replacen('B', "A", 1)] {
        let error = api::config::web_push_public_key(bad).expect_err(bad).to_string();
        assert!(error.starts_with("WEB_PUSH_PUBLIC_KEY"), "{bad}: {error}");
    }
}

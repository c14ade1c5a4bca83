//! Liveness and readiness: readiness is 200 with the release header only when the database answers
//! with current migrations; liveness holds whatever the database does.

use crate::support::{Env, TestApp, expect_problem};

#[tokio::test]
async fn ready_reports_the_release_identity() {
    let app = TestApp::spawn_configured(Env::default(), |config| config.release = "0.1.0+abc123def456".into()).await;
    let response = app.client.get(app.url("/health/ready")).send().await.expect("send");
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["steward-release"], "0.1.0+abc123def456");
    let body: serde_json::Value = response.json().await.expect("json");
    assert_eq!(
        body,
        serde_json::json!({ "status": "ready", "release": "0.1.0+abc123def456" })
    );
}

#[tokio::test]
async fn not_ready_when_migrations_are_not_current() {
    let app = TestApp::spawn().await;
    sqlx::query("DELETE FROM _sqlx_migrations WHERE version = (SELECT max(version) FROM _sqlx_migrations)")
        .execute(&app.db.pool)
        .await
        .expect("forget a migration");
    let response = app.client.get(app.url("/health/ready")).send().await.expect("send");
    assert_eq!(response.headers()["steward-release"], "test-release");
    let body = expect_problem(response, 503, "not_ready").await;
    assert_eq!(body["detail"], "database migrations are not current");
}

#[tokio::test]
async fn not_ready_when_the_database_is_unreachable() {
    let app = TestApp::spawn().await;
    app.app_store.pool().close().await;
    let body = expect_problem(
        app.client.get(app.url("/health/ready")).send().await.expect("send"),
        503,
        "not_ready",
    )
    .await;
    assert_eq!(body["detail"], "the database is unreachable");
}

#[tokio::test]
async fn while_the_database_is_away_routes_answer_503_liveness_holds_and_all_resumes_when_it_returns() {
    let db = testkit::TestDatabase::new().await;
    let relay = testkit::outage::DatabaseRelay::start(&db.url).await;
    let store = store::Store::connect_lazy(&relay.url(&db.url_as("api")), 4).expect("a store through the relay");
    let app = TestApp::spawn_on_store(db, Env::default(), store).await;
    let session = app.new_session_id().await;

    relay.down();
    let gone = app.send(reqwest::Method::GET, &format!("/v1/sessions/{session}")).await;
    assert_eq!(gone.headers()["retry-after"], "5");
    let problem = expect_problem(gone, 503, "service_unavailable").await;
    assert!(
        problem["detail"].as_str().expect("detail").contains("retry"),
        "{problem}"
    );
    let created = app
        .request(reqwest::Method::POST, "/v1/sessions")
        .json(&serde_json::json!({ "agent_id": "default" }))
        .send()
        .await
        .expect("send");
    expect_problem(created, 503, "service_unavailable").await;
    let ready = app.send(reqwest::Method::GET, "/health/ready").await;
    expect_problem(ready, 503, "not_ready").await;
    assert_eq!(app.send(reqwest::Method::GET, "/health/live").await.status(), 200);

    relay.up();
    let back = app.send(reqwest::Method::GET, &format!("/v1/sessions/{session}")).await;
    assert_eq!(back.status(), 200, "resumed once the database is back");
    assert_eq!(app.send(reqwest::Method::GET, "/health/ready").await.status(), 200);
    assert_eq!(app.count("sessions").await, 1, "the refused create left nothing");
}

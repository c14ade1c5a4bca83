//! Readiness: 200 with the release header only when the database answers with current migrations.

use crate::support::{Env, TestApp, expect_problem};

#[tokio::test]
async fn ready_reports_the_release_identity() {
    let app = TestApp::spawn_with(Env::default().set("AGENT_RELEASE", "2026.11.21-abc123")).await;
    let response = app.client.get(app.url("/health/ready")).send().await.expect("send");
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["steward-release"], "2026.11.21-abc123");
    let body: serde_json::Value = response.json().await.expect("json");
    assert_eq!(
        body,
        serde_json::json!({ "status": "ready", "release": "2026.11.21-abc123" })
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

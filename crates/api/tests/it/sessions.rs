//! Sessions: creation pins the agent version; deletes are irreversible, refused during an active
//! run, and safe to repeat.

use reqwest::Method;
use serde_json::json;
use testkit::TestDatabase;

use crate::support::{Env, TestApp, expect_problem, json};

#[tokio::test]
async fn create_returns_the_pinned_agent_and_reads_back() {
    let app = TestApp::spawn().await;
    let (location, created) = app
        .create(
            "/v1/sessions",
            json!({ "agent_id": "default", "metadata": { "title": "Trip planning", "client": "ios" } }),
        )
        .await;
    let id = created["session_id"].as_str().expect("id");
    assert_eq!(location, format!("/v1/sessions/{id}"));
    assert_eq!(created["agent_id"], "default");
    assert_eq!(created["agent_version"].as_str().map(str::len), Some(32));
    assert_eq!(created["title"], "Trip planning");
    assert_eq!(created["metadata"]["client"], "ios");
    assert_eq!(created["folder_id"], serde_json::Value::Null);
    assert_eq!(created["schedule_id"], serde_json::Value::Null);
    assert_eq!(created["last_run_id"], serde_json::Value::Null);

    let (status, read) = app.get_json(&location).await;
    assert_eq!(status, 200);
    assert_eq!(read, created);

    // Without metadata: an empty object and no title.
    let bare = app
        .request(Method::POST, "/v1/sessions")
        .json(&json!({ "agent_id": "default" }))
        .send()
        .await
        .expect("send");
    let (status, bare) = json(bare).await;
    assert_eq!(status, 201);
    assert_eq!(
        (bare["metadata"].clone(), bare["title"].clone()),
        (json!({}), serde_json::Value::Null)
    );
}

#[tokio::test]
async fn bad_bodies_get_clear_problems() {
    let app = TestApp::spawn().await;
    let post = |body: serde_json::Value| app.request(Method::POST, "/v1/sessions").json(&body).send();

    let body = expect_problem(
        post(json!({ "agent_id": "ghost" })).await.expect("send"),
        422,
        "unknown_agent",
    )
    .await;
    assert_eq!(body["detail"], "no agent `ghost` is configured");
    expect_problem(
        post(json!({ "agent_id": "default", "metadata": [1] }))
            .await
            .expect("send"),
        422,
        "validation_failed",
    )
    .await;
    expect_problem(
        post(json!({ "agent_id": "default", "extra": 1 })).await.expect("send"),
        422,
        "validation_failed",
    )
    .await;
    expect_problem(post(json!({})).await.expect("send"), 422, "validation_failed").await;
    let big = json!({ "agent_id": "default", "metadata": { "blob": "x".repeat(20_000) } });
    expect_problem(post(big).await.expect("send"), 422, "validation_failed").await;

    let syntax = app
        .request(Method::POST, "/v1/sessions")
        .header("content-type", "application/json")
        .body("{")
        .send();
    expect_problem(syntax.await.expect("send"), 400, "invalid_request").await;
    let no_type = app
        .request(Method::POST, "/v1/sessions")
        .body(r#"{"agent_id":"default"}"#)
        .send();
    expect_problem(no_type.await.expect("send"), 415, "unsupported_media_type").await;

    let unknown = format!("/v1/sessions/{}", uuid::Uuid::new_v4());
    for path in ["/v1/sessions/not-a-uuid", &unknown] {
        expect_problem(app.send(Method::GET, path).await, 404, "session_not_found").await;
    }
}

#[tokio::test]
async fn sessions_keep_their_agent_version_when_a_restart_changes_the_configuration() {
    let before = TestApp::spawn().await;
    let old = before.create_session(json!({})).await;
    let old_version = old["agent_version"].as_str().expect("version").to_owned();
    let TestApp { db, .. } = before;

    // Restart with other instructions for the agent: new sessions get a new version.
    let dir = tempfile::tempdir().expect("tempdir");
    let definition = json!({
        "id": "default", "instructions": "Answer in haiku.",
        "model": { "provider": "scripted", "model": "scripted-1" }
    });
    let agents = crate::support::write_file(dir.path(), "agents.json", &json!([definition]).to_string(), 0o600);
    let after = TestApp::spawn_on(
        db,
        Env::default().set("AGENT_DEFINITIONS_FILE", agents.to_str().expect("path")),
    )
    .await;
    let new = after.create_session(json!({})).await;
    assert_ne!(new["agent_version"], old_version.as_str());
    let (_, reread) = after
        .get_json(&format!("/v1/sessions/{}", old["session_id"].as_str().expect("id")))
        .await;
    assert_eq!(
        reread["agent_version"],
        old_version.as_str(),
        "an existing session keeps its pinned version"
    );

    // Both configurations stay recorded for the runs of their sessions.
    let versions: i64 = sqlx::query_scalar("SELECT count(*) FROM agent_versions WHERE agent_id = 'default'")
        .fetch_one(&after.db.pool)
        .await
        .expect("count");
    assert_eq!(versions, 2);
}

async fn insert_run(db: &TestDatabase, session: &str, state: &str) -> Result<uuid::Uuid, sqlx::Error> {
    sqlx::query_scalar(
        "INSERT INTO runs (id, session_id, state, finished_at)
         VALUES (gen_random_uuid(), $1::uuid, $2,
                 CASE WHEN $2 IN ('completed', 'failed', 'cancelled') THEN now() END)
         RETURNING id",
    )
    .bind(session)
    .bind(state)
    .fetch_one(&db.pool)
    .await
}

#[tokio::test]
async fn delete_is_refused_during_an_active_run_and_safe_to_repeat() {
    let app = TestApp::spawn().await;
    let session = app.create_session(json!({})).await;
    let id = session["session_id"].as_str().expect("id").to_owned();
    let path = format!("/v1/sessions/{id}");
    let run = insert_run(&app.db, &id, "running").await.expect("insert run");

    let (_, indexed) = app.get_json(&path).await;
    assert_eq!(
        indexed["last_run_id"],
        run.to_string(),
        "the session shows its last run"
    );

    let body = expect_problem(app.send(Method::DELETE, &path).await, 409, "session_has_active_run").await;
    assert_eq!(body["run_id"], run.to_string());
    assert_eq!(app.get_json(&path).await.0, 200, "nothing was deleted");

    sqlx::query("UPDATE runs SET state = 'completed', finished_at = now() WHERE id = $1")
        .bind(run)
        .execute(&app.db.pool)
        .await
        .expect("finish run");
    let upload = app
        .request(Method::POST, &format!("{path}/artifacts?filename=a.txt"))
        .body("hello")
        .send()
        .await
        .expect("send");
    assert_eq!(upload.status(), 201);

    assert_eq!(app.send(Method::DELETE, &path).await.status(), 204);
    assert_eq!(
        app.send(Method::DELETE, &path).await.status(),
        204,
        "repeat delete succeeds"
    );
    expect_problem(app.send(Method::GET, &path).await, 404, "session_not_found").await;

    // Irreversible: runs, artifacts and their bytes went with it.
    for table in ["runs", "artifacts", "artifact_chunks"] {
        assert_eq!(app.count(table).await, 0, "{table}");
    }
    let never = format!("/v1/sessions/{}", uuid::Uuid::new_v4());
    expect_problem(app.send(Method::DELETE, &never).await, 404, "session_not_found").await;
}

#[tokio::test]
async fn the_database_allows_one_active_run_per_session() {
    let app = TestApp::spawn().await;
    let session = app.create_session(json!({})).await;
    let id = session["session_id"].as_str().expect("id");
    for active in ["queued", "running", "waiting_approval", "waiting_input"] {
        let first = insert_run(&app.db, id, active).await.expect("first active run");
        let second = insert_run(&app.db, id, "queued").await.expect_err("second active run");
        assert!(second.to_string().contains("runs_one_active_per_session"), "{second}");
        sqlx::query("UPDATE runs SET state = 'cancelled', finished_at = now() WHERE id = $1")
            .bind(first)
            .execute(&app.db.pool)
            .await
            .expect("end run");
    }
    for terminal in ["completed", "failed", "cancelled"] {
        insert_run(&app.db, id, terminal)
            .await
            .expect("terminal runs never conflict");
    }
}

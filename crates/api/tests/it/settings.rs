//! Model settings: offered combinations only; saved settings reach the next message's run.

use reqwest::Method;
use serde_json::json;

use crate::support::{Env, TestApp, expect_problem, json};

const OFFER: &str = r#"{"chat": [{"model": "gpt-fast", "reasoning_efforts": ["none"]},
                                 {"model": "gpt-deep", "reasoning_efforts": ["low", "high"]}],
                        "memory": [{"model": "gpt-mini", "reasoning_efforts": ["none"]}]}"#;

/// An API offering [`OFFER`] (the file is read at start).
async fn app_with_offer() -> TestApp {
    let dir = tempfile::tempdir().expect("tempdir");
    let offer = dir.path().join("models.json");
    std::fs::write(&offer, OFFER).expect("write offer");
    TestApp::spawn_with(Env::default().set("MODEL_SETTINGS_FILE", offer.to_str().expect("path"))).await
}

#[tokio::test]
async fn settings_offer_choose_and_apply_to_the_next_message() {
    let app = app_with_offer().await;

    let (status, current) = app.get_json("/v1/settings/models").await;
    assert_eq!(status, 200);
    assert_eq!(
        (
            current["chat_model"].as_str(),
            current["chat_reasoning_effort"].as_str()
        ),
        (Some("gpt-fast"), Some("none"))
    );
    assert_eq!(
        current["offered"]["chat"][1]["reasoning_efforts"],
        json!(["low", "high"])
    );

    let save = |chat_model: &str, effort: &str| {
        app.request(Method::PUT, "/v1/settings/models")
            .json(&json!({ "chat_model": chat_model, "chat_reasoning_effort": effort,
                           "memory_model": "gpt-mini", "memory_reasoning_effort": "none" }))
            .send()
    };
    let problem = expect_problem(
        save("gpt-deep", "medium").await.expect("send"),
        422,
        "unsupported_model_choice",
    )
    .await;
    assert_eq!(problem["field"], "chat_reasoning_effort");
    let problem = expect_problem(
        save("gpt-9", "low").await.expect("send"),
        422,
        "unsupported_model_choice",
    )
    .await;
    assert_eq!(problem["field"], "chat_model");
    let (status, saved) = json(save("gpt-deep", "high").await.expect("send")).await;
    assert_eq!((status, saved["chat_model"].as_str()), (200, Some("gpt-deep")));
    let (_, current) = app.get_json("/v1/settings/models").await;
    assert_eq!(current["chat_reasoning_effort"], "high");

    // The next message's run carries the choice.
    let session = app.new_session().await;
    assert_eq!(app.submit(&session, "m-1", json!({ "text": "hi" })).await.status(), 202);
    let snapshot: (Option<String>, Option<String>) =
        sqlx::query_as("SELECT chat_model, chat_reasoning_effort FROM runs")
            .fetch_one(&app.db.pool)
            .await
            .expect("run");
    assert_eq!(snapshot, (Some("gpt-deep".into()), Some("high".into())));
}

/// A saved choice the offer no longer includes (the operator dropped a model) is not applied:
/// the next message's run takes the offer's default, for chat and memory alike, as the settings
/// read shows; a choice still offered applies again.
#[tokio::test]
async fn a_choice_no_longer_offered_gives_the_next_run_the_default() {
    let app = app_with_offer().await;
    let snapshot = async |run: uuid::Uuid| -> (String, String, String, String) {
        sqlx::query_as(
            "SELECT chat_model, chat_reasoning_effort, memory_model, memory_reasoning_effort FROM runs WHERE id = $1",
        )
        .bind(run)
        .fetch_one(&app.db.pool)
        .await
        .expect("run")
    };
    let stored = |chat: &str, effort: &str, memory: &str| {
        sqlx::query(
            "INSERT INTO model_settings (principal_id, chat_model, chat_reasoning_effort, memory_model,
             memory_reasoning_effort) VALUES ('owner', $1, $2, $3, 'none')
             ON CONFLICT (principal_id) DO UPDATE SET chat_model = excluded.chat_model,
             chat_reasoning_effort = excluded.chat_reasoning_effort, memory_model = excluded.memory_model",
        )
        .bind(chat.to_owned())
        .bind(effort.to_owned())
        .bind(memory.to_owned())
        .execute(&app.db.pool)
    };
    let default = (
        "gpt-fast".to_owned(),
        "none".to_owned(),
        "gpt-mini".to_owned(),
        "none".to_owned(),
    );
    let cases = [
        // Chat model gone; effort gone; memory model gone; all offered.
        (("gpt-gone", "low", "gpt-mini"), default.clone()),
        (("gpt-deep", "medium", "gpt-mini"), default.clone()),
        (("gpt-deep", "low", "mini-gone"), default.clone()),
        (
            ("gpt-deep", "low", "gpt-mini"),
            (
                "gpt-deep".to_owned(),
                "low".to_owned(),
                "gpt-mini".to_owned(),
                "none".to_owned(),
            ),
        ),
    ];
    for (n, ((chat, effort, memory), expected)) in cases.into_iter().enumerate() {
        stored(chat, effort, memory).await.expect("store a choice");
        let session = app.new_session().await;
        let (status, accepted) = json(
            app.submit(&session, &format!("stale-{n}"), json!({ "text": "hi" }))
                .await,
        )
        .await;
        assert_eq!(status, 202);
        let run = accepted["run"]["run_id"]
            .as_str()
            .expect("run id")
            .parse()
            .expect("uuid");
        assert_eq!(snapshot(run).await, expected, "stored {chat}/{effort}/{memory}");
        let (_, current) = app.get_json("/v1/settings/models").await;
        assert_eq!(
            (
                current["chat_model"].as_str(),
                current["chat_reasoning_effort"].as_str()
            ),
            (Some(expected.0.as_str()), Some(expected.1.as_str())),
            "the settings read shows what the run took"
        );
    }
}

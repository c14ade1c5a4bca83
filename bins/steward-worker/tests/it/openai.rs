//! The worker against a real HTTP server speaking the OpenAI Chat Completions streaming format:
//! tool calls assembled from fragments, usage and cost, approval and denial.

use serde_json::json;

use crate::support::{FakeModel, FakeState, Stack, agent_definitions, fake_model};

async fn stack_with_model(model: &FakeModel) -> Stack {
    let definitions = agent_definitions(
        json!({ "provider": "openai", "model": "gpt-test", "input_cost_per_mtok": "2", "output_cost_per_mtok": "8" }),
        None,
    );
    let mut stack = Stack::api(&[("AGENT_DEFINITIONS", &definitions)]).await;
    let key = stack.key_file("sk-test-123\n");
    stack
        .start_worker(&[("OPENAI_BASE_URL", &model.url), ("OPENAI_API_KEY_FILE", &key)])
        .await;
    stack
}

fn add_note_call() -> FakeState {
    FakeState {
        tool_call: Some(("notes__add".into(), r#"{"text": "from the model"}"#.into())),
        ..FakeState::default()
    }
}

#[tokio::test]
async fn streamed_tool_calls_park_for_approval_then_run_once_with_usage_counted() {
    let model = fake_model(add_note_call()).await;
    let stack = stack_with_model(&model).await;
    let session = stack.session().await;
    let run = stack.submit(&session, "Remember that I like tea").await;
    stack.wait_for(&run, &["waiting_approval"]).await;

    let requests = model.requests();
    let (authorization, first) = &requests[0];
    assert_eq!(authorization.as_deref(), Some("Bearer sk-test-123"));
    assert_eq!(
        (first["model"].as_str(), first["stream"].as_bool()),
        (Some("gpt-test"), Some(true))
    );
    assert_eq!(first["stream_options"]["include_usage"], true);
    assert_eq!(
        first["messages"][0],
        json!({ "role": "system", "content": "Be helpful." })
    );
    assert_eq!(
        first["messages"][1],
        json!({ "role": "user", "content": "Remember that I like tea" })
    );
    let names: Vec<&str> = first["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .map(|t| t["function"]["name"].as_str().expect("name"))
        .collect();
    assert_eq!(
        names,
        [
            "notes__list",
            "notes__add",
            "owner__ask",
            "schedule__create",
            "folders__list",
            "folders__propose"
        ]
    );

    let approval = stack.pending_approvals(&session).await.remove(0);
    assert_eq!(
        (approval["tool"].as_str(), &approval["arguments"]),
        (Some("notes.add"), &json!({ "text": "from the model" }))
    );
    stack.decide_ok(&approval, "approve_once").await;
    stack.completes(&run).await;

    let requests = model.requests();
    assert_eq!(requests.len(), 2, "one model call per step");
    let second = &requests[1].1;
    let messages = second["messages"].as_array().expect("messages");
    assert_eq!(messages[2]["tool_calls"][0]["function"]["name"], "notes__add");
    assert_eq!(messages[2]["tool_calls"][0]["id"], "call_abc");
    assert_eq!(messages[3]["role"], "tool");
    assert_eq!(messages[3]["tool_call_id"], "call_abc");
    assert!(messages[3]["content"].as_str().expect("content").contains("succeeded"));

    assert_eq!(stack.scalar::<String>("SELECT text FROM notes").await, "from the model");
    let usage: (i64, i64, i64) = sqlx::query_as("SELECT input_tokens, output_tokens, cost_micros FROM runs")
        .fetch_one(&stack.db.pool)
        .await
        .expect("usage");
    // (50 + 100) input tokens at 2 per million, (10 + 20) output tokens at 8 per million.
    assert_eq!(usage, (150, 30, 100 + 80 + 200 + 160));
    let reply = stack.reply(&session).await;
    assert_eq!(
        reply["text"], "All done ✓ — déjà.",
        "multi-byte text split across chunks arrives whole"
    );
    assert_eq!(reply["usage"]["cost"], "0.00036");
}

#[tokio::test]
async fn a_denial_reaches_the_model_and_nothing_runs() {
    let model = fake_model(add_note_call()).await;
    let stack = stack_with_model(&model).await;
    let session = stack.session().await;
    let run = stack.submit(&session, "Remember that I like tea").await;
    stack.wait_for(&run, &["waiting_approval"]).await;
    let approval = stack.pending_approvals(&session).await.remove(0);
    stack.decide_ok(&approval, "deny").await;
    stack.completes(&run).await;
    let told = &model.requests()[1].1["messages"][3];
    assert_eq!(told["role"], "tool");
    assert!(told["content"].as_str().expect("content").contains("denied"), "{told}");
    assert_eq!(stack.scalar::<i64>("SELECT count(*) FROM notes").await, 0);
}

#[tokio::test]
async fn a_provider_error_fails_the_run_with_a_code() {
    // Nothing listens on the discard port, and no test's server can be given it (it is below the
    // ephemeral range): the provider cannot be reached. A port bound and then released could be
    // handed to another test's fake model meanwhile, which then answered this run (seen in CI).
    let url = "http://127.0.0.1:9/v1";
    let definitions = agent_definitions(json!({ "provider": "openai", "model": "gpt-test" }), None);
    let mut stack = Stack::api(&[("AGENT_DEFINITIONS", &definitions)]).await;
    stack.start_worker(&[("OPENAI_BASE_URL", url)]).await;
    let session = stack.session().await;
    let run = stack.submit(&session, "hello").await;
    let failed = stack.wait_for(&run, &["completed", "failed"]).await;
    assert_eq!(
        (failed["state"].as_str(), failed["reason"].as_str()),
        (Some("failed"), Some("model.error"))
    );
}

#[tokio::test]
async fn tool_and_model_call_limits_fail_the_run_with_their_codes() {
    let model = fake_model(FakeState {
        tool_call: Some(("notes__list".into(), "{}".into())),
        calls_per_response: 2,
        ..FakeState::default()
    })
    .await;
    let definitions = agent_definitions(json!({ "provider": "openai", "model": "gpt-test" }), None);
    let mut stack = Stack::api(&[("AGENT_DEFINITIONS", &definitions), ("RUN_MAX_TOOL_CALLS", "1")]).await;
    stack.start_worker(&[("OPENAI_BASE_URL", &model.url)]).await;
    let session = stack.session().await;
    let run = stack.submit(&session, "list my notes twice").await;
    let failed = stack.wait_for(&run, &["completed", "failed"]).await;
    assert_eq!(
        (failed["state"].as_str(), failed["reason"].as_str()),
        (Some("failed"), Some("limit.max_tool_calls"))
    );
    assert_eq!(
        stack
            .scalar::<i64>("SELECT count(*) FROM tool_invocations WHERE state = 'succeeded'")
            .await,
        0,
        "no call ran"
    );

    let model = fake_model(FakeState {
        tool_call: Some(("notes__list".into(), "{}".into())),
        ..FakeState::default()
    })
    .await;
    let mut stack = Stack::api(&[("AGENT_DEFINITIONS", &definitions), ("RUN_MAX_MODEL_CALLS", "1")]).await;
    stack.start_worker(&[("OPENAI_BASE_URL", &model.url)]).await;
    let session = stack.session().await;
    let run = stack.submit(&session, "list my notes").await;
    let failed = stack.wait_for(&run, &["completed", "failed"]).await;
    assert_eq!(
        (failed["state"].as_str(), failed["reason"].as_str()),
        (Some("failed"), Some("limit.max_model_calls"))
    );
    assert_eq!(model.requests().len(), 1, "no second model call");
}

#[tokio::test]
async fn the_owners_model_settings_choose_the_model_of_the_next_message() {
    let model = fake_model(FakeState::default()).await;
    let definitions = agent_definitions(json!({ "provider": "openai", "model": "gpt-test" }), None);
    let offer = r#"{"chat": [{"model": "gpt-test", "reasoning_efforts": ["none"]},
                             {"model": "gpt-better", "reasoning_efforts": ["high"]}],
                    "memory": [{"model": "gpt-test", "reasoning_efforts": ["none"]}]}"#;
    let mut stack = Stack::api(&[
        ("AGENT_DEFINITIONS", &definitions),
        ("MODEL_SETTINGS", offer),
        (
            "AUTH_SCOPES",
            "sessions.read,sessions.write,settings.read,settings.write",
        ),
    ])
    .await;
    stack.start_worker(&[("OPENAI_BASE_URL", &model.url)]).await;
    let session = stack.session().await;
    let run = stack.submit(&session, "first").await;
    stack.completes(&run).await;

    let saved = stack
        .request(reqwest::Method::PUT, "/v1/settings/models")
        .json(&json!({ "chat_model": "gpt-better", "chat_reasoning_effort": "high",
                       "memory_model": "gpt-test", "memory_reasoning_effort": "none" }))
        .send()
        .await
        .expect("send");
    assert_eq!(saved.status(), 200);
    let run = stack.submit(&session, "second").await;
    stack.completes(&run).await;

    let requests = model.requests();
    assert_eq!(
        (requests[0].1["model"].as_str(), requests[0].1.get("reasoning_effort")),
        (Some("gpt-test"), None)
    );
    assert_eq!(
        requests[1].1["model"], "gpt-better",
        "the existing chat's next message uses the new settings"
    );
    assert_eq!(requests[1].1["reasoning_effort"], "high");
}

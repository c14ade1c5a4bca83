//! Calling in Chat: the real API and worker with the scripted model. A brief waits for an
//! approval that shows it word for word with the configuration revision it is pinned to; once
//! approved it becomes the one outbound reservation (the call worker places it; the worker never
//! holds the provider key). A changed configuration makes an approval undispatchable; a brief
//! that cannot be placed is refused before any approval; without the flag neither tool exists.

use serde_json::{Value, json};

use crate::support::Stack;

const NUMBER: &str = "+15551230000";

fn configuration(assistant_name: Option<&str>) -> String {
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
    value.to_string()
}

async fn stack() -> (Stack, std::path::PathBuf) {
    let mut stack = Stack::api(&[("AGENT_CALL_ENABLED", "1")]).await;
    let path = stack.dir.path().join("callprov-configuration.json");
    std::fs::write(&path, configuration(None)).expect("write the configuration");
    let file = path.display().to_string();
    stack
        .start_worker(&[("AGENT_CALL_ENABLED", "1"), ("CALLPROV_CONFIGURATION_FILE", &file)])
        .await;
    (stack, path)
}

fn revision(path: &std::path::Path) -> String {
    let bytes = std::fs::read(path).expect("read");
    domain::call::CallConfiguration::parse(&bytes)
        .expect("valid")
        .revision()
        .to_string()
}

const BRIEF: &str = r#"{"to": "+15557654321", "purpose": "Confirm the delivery window for the oak table.", "may_say": "Alex can take the delivery on Tuesday between 9 and 12.", "voicemail_message": "Hi, this is Steward for Alex Rivera about the oak table; please call back."}"#;

fn last(results: &[Value]) -> String {
    results.last().expect("a tool result").to_string()
}

#[tokio::test]
async fn an_approved_brief_pinned_to_its_revision_becomes_the_one_reservation() {
    let (stack, path) = stack().await;
    let session = stack.session().await;
    let run = stack.submit(&session, &format!("/tool calls.place {BRIEF}")).await;
    stack.wait_for(&run, &["waiting_approval"]).await;
    let approval = stack.pending_approvals(&session).await.remove(0);
    let shown = approval.to_string();
    for words in [
        "+15557654321",
        "Confirm the delivery window for the oak table.",
        "Alex can take the delivery on Tuesday between 9 and 12.",
        "please call back.",
    ] {
        assert!(
            shown.contains(words),
            "the approval shows the brief word for word: {shown}"
        );
    }
    assert!(
        shown.contains(&revision(&path)),
        "and the revision it is pinned to: {shown}"
    );
    let before: i64 = stack.scalar("SELECT count(*) FROM call_records").await;
    assert_eq!(before, 0, "nothing before the approval");

    stack.decide_ok(&approval, "approve_once").await;
    stack.completes(&run).await;
    let result = last(&stack.tool_results(&session).await);
    assert!(result.contains("\"state\":\"approved\""), "{result}");
    let (direction, state, brief, pinned, in_session): (String, String, Value, String, bool) =
        sqlx::query_as("SELECT direction, state, brief, revision, session_id = $1::uuid FROM call_records")
            .bind(&session)
            .fetch_one(&stack.db.pool)
            .await
            .expect("one call");
    assert_eq!(
        (direction.as_str(), state.as_str(), in_session),
        ("outbound", "approved", true)
    );
    assert_eq!(
        brief["may_say"],
        json!("Alex can take the delivery on Tuesday between 9 and 12.")
    );
    assert!(
        brief.get("configuration_revision").is_none(),
        "the brief is the brief alone"
    );
    assert_eq!(pinned, revision(&path));

    // A second brief while the first holds the reservation is refused after its approval.
    let run = stack.submit(&session, &format!("/tool calls.place {BRIEF}")).await;
    stack.wait_for(&run, &["waiting_approval"]).await;
    let approval = stack.pending_approvals(&session).await.remove(0);
    stack.decide_ok(&approval, "approve_once").await;
    stack.completes(&run).await;
    assert!(last(&stack.tool_results(&session).await).contains("calls.busy"));
    let calls: i64 = stack.scalar("SELECT count(*) FROM call_records").await;
    assert_eq!(calls, 1);
}

#[tokio::test]
async fn an_approval_under_a_changed_configuration_reserves_nothing() {
    let (stack, path) = stack().await;
    let session = stack.session().await;
    let run = stack.submit(&session, &format!("/tool calls.place {BRIEF}")).await;
    stack.wait_for(&run, &["waiting_approval"]).await;
    let approval = stack.pending_approvals(&session).await.remove(0);
    // Adding the assistant's name changes the revision.
    std::fs::write(&path, configuration(Some("Steward"))).expect("edit the configuration");
    stack.decide_ok(&approval, "approve_once").await;
    stack.completes(&run).await;
    let result = last(&stack.tool_results(&session).await);
    assert!(
        result.contains("calls.revision_changed") && result.contains("fresh approval"),
        "{result}"
    );
    let calls: i64 = stack.scalar("SELECT count(*) FROM call_records").await;
    assert_eq!(calls, 0);
}

#[tokio::test]
async fn a_brief_that_cannot_be_placed_is_refused_before_any_approval() {
    let (stack, _path) = stack().await;
    let session = stack.session().await;
    let brief = format!(r#"{{"to": "{NUMBER}", "purpose": "p", "may_say": "m"}}"#);
    let run = stack.submit(&session, &format!("/tool calls.place {brief}")).await;
    stack.completes(&run).await;
    assert!(stack.pending_approvals(&session).await.is_empty());
    let result = last(&stack.tool_results(&session).await);
    assert!(result.contains("is the public number itself"), "{result}");
}

#[tokio::test]
async fn without_calling_neither_tool_exists() {
    let mut stack = Stack::api(&[]).await;
    stack.start_worker(&[]).await;
    let session = stack.session().await;
    let run = stack.submit(&session, "/tool calls.list {}").await;
    stack.completes(&run).await;
    assert!(last(&stack.tool_results(&session).await).contains("tool.unknown"));
}

#[tokio::test]
async fn deleting_a_call_redacts_what_it_left_in_conversations_and_keeps_the_owners_messages() {
    let mut stack = Stack::api(&[
        ("AGENT_CALL_ENABLED", "1"),
        ("AUTH_SCOPES", "sessions.read,sessions.write,call.read,call.delete"),
    ])
    .await;
    let path = stack.dir.path().join("callprov-configuration.json");
    std::fs::write(&path, configuration(None)).expect("write the configuration");
    let file = path.display().to_string();
    stack
        .start_worker(&[("AGENT_CALL_ENABLED", "1"), ("CALLPROV_CONFIGURATION_FILE", &file)])
        .await;
    let session = stack.session().await;
    let run = stack.submit(&session, &format!("/tool calls.place {BRIEF}")).await;
    stack.wait_for(&run, &["waiting_approval"]).await;
    let approval = stack.pending_approvals(&session).await.remove(0);
    stack.decide_ok(&approval, "approve_once").await;
    stack.completes(&run).await;
    let placed: uuid::Uuid = stack.scalar("SELECT id FROM call_records").await;

    // The call worker placed it and it ended; an inbound message arrived too.
    sqlx::query("UPDATE call_records SET state = 'dispatched', provider_call_id = 'p-out' WHERE id = $1")
        .bind(placed)
        .execute(&stack.db.pool)
        .await
        .expect("dispatched");
    let call = stack.store_as("call").await;
    let finished = |provider: &str, direction, reference, summary: &str| store::CallResult {
        provider_call_id: provider.into(),
        direction,
        counterpart: Some("+15557654321".into()),
        reference,
        transcript: json!([{ "user": "user", "text": summary }]),
        summary: Some(summary.into()),
        answered_by: Some("human".into()),
        duration_seconds: Some(60),
    };
    use domain::call::CallDirection::{Inbound, Outbound};
    call.settle_call_result(
        &finished("p-out", Outbound, Some(placed), "They confirmed Tuesday at 10."),
        false,
    )
    .await
    .expect("settled");
    call.settle_call_result(&finished("p-in", Inbound, None, "Sam asked about the chairs."), false)
        .await
        .expect("settled");

    let run = stack.submit(&session, "/tool calls.list {}").await;
    stack.completes(&run).await;
    let reply = stack.reply(&session).await["text"].as_str().expect("text").to_owned();
    assert!(
        reply.contains("They confirmed Tuesday at 10."),
        "the reply quotes the call: {reply}"
    );

    // While a run of a conversation the call entered is active, the call cannot be deleted.
    let run = stack
        .submit(&session, "/ask Shall I tell Sam about Tuesday at 10?")
        .await;
    stack.wait_for(&run, &["waiting_input"]).await;
    let refused = stack
        .request(reqwest::Method::DELETE, &format!("/v1/calls/{placed}"))
        .send()
        .await
        .expect("send");
    assert_eq!(refused.status(), 409);
    let events = stack.events(&session).await;
    let question = events
        .iter()
        .find(|(kind, _)| kind == "question.asked")
        .and_then(|(_, payload)| payload["question_id"].as_str())
        .expect("the question")
        .to_owned();
    let answered = stack
        .request(reqwest::Method::POST, &format!("/v1/runs/{run}/input"))
        .json(&json!({ "question_id": question, "text": "No" }))
        .send()
        .await
        .expect("send");
    assert_eq!(answered.status(), 200);
    stack.completes(&run).await;
    let run = stack
        .submit(&session, "/tool notes.list {\"about\": \"Tuesday at 10\"}")
        .await;
    stack.completes(&run).await;

    let deleted = stack
        .request(reqwest::Method::DELETE, &format!("/v1/calls/{placed}"))
        .send()
        .await
        .expect("send");
    assert_eq!(deleted.status(), 204);
    let redaction = call.redact_call(placed).await.expect("redact");
    assert_eq!(
        redaction.tool_results, 2,
        "calls.place's and calls.list's results: {redaction:?}"
    );
    assert!(redaction.replies >= 2, "{redaction:?}");
    assert_eq!(
        call.redact_call(placed).await.expect("again"),
        store::Redaction::default()
    );

    let events = stack.events(&session).await;
    let text = serde_json::to_string(&events).expect("json");
    assert!(
        !text.contains("They confirmed Tuesday at 10."),
        "nothing of the call is left: {text}"
    );
    assert!(
        text.contains("Sam asked about the chairs."),
        "another call's row stays: {text}"
    );
    assert!(text.contains(store::REDACTED_REPLY));
    let asked = events
        .iter()
        .find(|(kind, _)| kind == "question.asked")
        .map(|(_, payload)| payload["text"].clone())
        .expect("the question");
    assert_eq!(asked, json!(store::REDACTED_REPLY), "a later question is redacted too");
    assert!(
        !text.contains("\"about\":\"Tuesday at 10\""),
        "a later proposed call's arguments too: {text}"
    );
    let owner_messages: Vec<&Value> = events
        .iter()
        .filter(|(kind, _)| kind == "user.message.created")
        .map(|(_, payload)| payload)
        .collect();
    assert_eq!(owner_messages.len(), 4);
    assert!(
        owner_messages[0].to_string().contains("Confirm the delivery window"),
        "the owner's message is kept"
    );
    let results: Value = stack
        .scalar("SELECT jsonb_agg(result ORDER BY created_at) FROM tool_invocations WHERE tool LIKE 'calls.%'")
        .await;
    assert!(!results.to_string().contains(&placed.to_string()), "{results}");
}

#[tokio::test]
async fn a_revision_the_model_supplies_is_replaced_by_the_current_one() {
    let (stack, path) = stack().await;
    let session = stack.session().await;
    let forged = "f".repeat(64);
    let brief =
        format!(r#"{{"to": "+15557654321", "purpose": "p", "may_say": "m", "configuration_revision": "{forged}"}}"#);
    let run = stack.submit(&session, &format!("/tool calls.place {brief}")).await;
    stack.wait_for(&run, &["waiting_approval"]).await;
    let approval = stack.pending_approvals(&session).await.remove(0);
    let shown = approval.to_string();
    assert!(shown.contains(&revision(&path)) && !shown.contains(&forged), "{shown}");
}

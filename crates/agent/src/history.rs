//! Builds the model's context from a session's persisted events: user messages, the model's own
//! steps (text and tool calls) and tool results, each tool result placed right after the step
//! that asked for it, as chat models require.

use std::collections::HashMap;

use serde_json::Value;
use store::EventRow;

use crate::model::{ChatMessage, ToolCall};

fn user_text(payload: &Value) -> String {
    let message = &payload["message"];
    let mut text = message["text"].as_str().unwrap_or_default().to_owned();
    for attachment in message["attachments"].as_array().into_iter().flatten() {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!(
            "[attachment: {} ({}, {} bytes)]",
            attachment["filename"].as_str().unwrap_or("file"),
            attachment["media_type"].as_str().unwrap_or("application/octet-stream"),
            attachment["size_bytes"].as_i64().unwrap_or_default(),
        ));
    }
    text
}

/// The tool result as the model reads it.
fn result_content(payload: &Value) -> String {
    serde_json::json!({ "status": payload["status"], "code": payload["code"], "result": payload["result"] }).to_string()
}

/// A call's identity: call ids are only unique within a run (some servers reuse them).
fn call_key(payload: &Value) -> Option<(&str, &str)> {
    Some((payload["run_id"].as_str()?, payload["call_id"].as_str()?))
}

/// The conversation so far. A call without a result (its run ended first) is answered so the
/// context stays well-formed: `outcome_unknown` if it had started — its effect may have
/// happened and must not be proposed again blindly — else `not_run`.
pub fn build(events: &[EventRow]) -> Vec<ChatMessage> {
    let results: HashMap<(&str, &str), String> = events
        .iter()
        .filter(|event| event.kind == "tool.result")
        .filter_map(|event| Some((call_key(&event.payload)?, result_content(&event.payload))))
        .collect();
    let started: std::collections::HashSet<(&str, &str)> = events
        .iter()
        .filter(|event| event.kind == "tool.started")
        .filter_map(|event| call_key(&event.payload))
        .collect();
    let mut messages = Vec::new();
    for event in events {
        match event.kind.as_str() {
            "user.message.created" => messages.push(ChatMessage::User(user_text(&event.payload))),
            "assistant.message" => {
                let run = event.payload["run_id"].as_str().unwrap_or_default();
                let calls: Vec<ToolCall> = event.payload["tool_calls"]
                    .as_array()
                    .into_iter()
                    .flatten()
                    .map(|call| ToolCall {
                        id: call["call_id"].as_str().unwrap_or_default().to_owned(),
                        name: call["tool"].as_str().unwrap_or_default().to_owned(),
                        arguments: call["arguments"].clone(),
                    })
                    .collect();
                let text = event.payload["text"].as_str().unwrap_or_default().to_owned();
                let answers: Vec<ChatMessage> = calls
                    .iter()
                    .map(|call| {
                        let key = (run, call.id.as_str());
                        let content = match results.get(&key) {
                            Some(content) => content.clone(),
                            None if started.contains(&key) => {
                                r#"{"status":"outcome_unknown","code":"tool.outcome_unknown","result":{"error":"the action was started but its outcome was never recorded; it may have taken effect"}}"#.to_owned()
                            }
                            None => r#"{"status":"not_run"}"#.to_owned(),
                        };
                        ChatMessage::Tool { call_id: call.id.clone(), content }
                    })
                    .collect();
                messages.push(ChatMessage::Assistant {
                    text,
                    tool_calls: calls,
                });
                messages.extend(answers);
            }
            _ => {}
        }
    }
    messages
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::ids::SessionId;
    use serde_json::json;

    fn event(seq: i64, kind: &str, payload: Value) -> EventRow {
        EventRow {
            session_id: SessionId::from_uuid(uuid::Uuid::nil()),
            seq,
            run_id: None,
            kind: kind.to_owned(),
            payload,
            created_at: jiff::Timestamp::UNIX_EPOCH,
        }
    }

    fn step(run: &str, call: &str) -> Value {
        json!({ "run_id": run, "text": "", "tool_calls": [{ "call_id": call, "tool": "webhook.post", "arguments": {} }] })
    }

    #[test]
    fn results_follow_their_calls_and_reused_call_ids_stay_apart() {
        let events = vec![
            event(1, "user.message.created", json!({ "message": { "text": "one" } })),
            event(2, "assistant.message", step("run-a", "call_0")),
            event(
                3,
                "tool.result",
                json!({ "run_id": "run-a", "call_id": "call_0", "status": "succeeded", "result": { "n": 1 } }),
            ),
            event(4, "user.message.created", json!({ "message": { "text": "two" } })),
            event(5, "assistant.message", step("run-b", "call_0")),
            event(
                6,
                "tool.result",
                json!({ "run_id": "run-b", "call_id": "call_0", "status": "failed", "result": { "n": 2 } }),
            ),
        ];
        let messages = build(&events);
        let contents: Vec<String> = messages
            .iter()
            .filter_map(|m| match m {
                ChatMessage::Tool { content, .. } => Some(content.clone()),
                _ => None,
            })
            .collect();
        assert_eq!(contents.len(), 2);
        assert!(
            contents[0].contains(r#""n":1"#) && contents[1].contains(r#""n":2"#),
            "{contents:?}"
        );
        assert!(
            matches!(messages[2], ChatMessage::Tool { .. }),
            "a result directly follows its call"
        );
    }

    #[test]
    fn a_started_call_without_result_is_an_unknown_outcome_never_not_run() {
        let events = vec![
            event(1, "user.message.created", json!({ "message": { "text": "post it" } })),
            event(2, "assistant.message", step("run-a", "call_1")),
            event(
                3,
                "tool.started",
                json!({ "run_id": "run-a", "call_id": "call_1", "tool": "webhook.post" }),
            ),
            event(4, "assistant.message", step("run-a", "call_2")),
        ];
        let messages = build(&events);
        let ChatMessage::Tool { content, .. } = &messages[2] else {
            panic!("tool message expected")
        };
        assert!(content.contains("outcome_unknown"), "{content}");
        let ChatMessage::Tool { content, .. } = &messages[4] else {
            panic!("tool message expected")
        };
        assert!(content.contains("not_run"), "{content}");
    }
}

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

/// The conversation so far. A call without a result yet (its run was cancelled) is answered
/// with a `not_run` result, so the context stays well-formed.
pub fn build(events: &[EventRow]) -> Vec<ChatMessage> {
    let results: HashMap<&str, String> = events
        .iter()
        .filter(|event| event.kind == "tool.result")
        .filter_map(|event| Some((event.payload["call_id"].as_str()?, result_content(&event.payload))))
        .collect();
    let mut messages = Vec::new();
    for event in events {
        match event.kind.as_str() {
            "user.message.created" => messages.push(ChatMessage::User(user_text(&event.payload))),
            "assistant.message" => {
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
                    .map(|call| ChatMessage::Tool {
                        call_id: call.id.clone(),
                        content: results
                            .get(call.id.as_str())
                            .cloned()
                            .unwrap_or_else(|| r#"{"status":"not_run"}"#.to_owned()),
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

//! Builds the model's context from a session's persisted events: user messages, the model's own
//! steps (text and tool calls) and tool results, each tool result placed right after the step
//! that asked for it, as chat models require.

use std::collections::{HashMap, HashSet};

use store::EventRow;
use uuid::Uuid;
use wire::event::{AssistantMessage, Event, ToolResult, UserMessage};

use crate::model::{ChatMessage, ToolCall};

fn user_text(message: &UserMessage) -> String {
    let mut text = message.text.clone().unwrap_or_default();
    for attachment in &message.attachments {
        if !text.is_empty() {
            text.push('\n');
        }
        text.push_str(&format!(
            "[attachment: {} ({}, {} bytes)]",
            attachment.filename, attachment.media_type, attachment.size_bytes,
        ));
    }
    text
}

/// The text of the owner's messages that started `run` (their own words: what memory recalls
/// for, and forms beliefs from), one per line.
pub fn owner_words(events: &[EventRow], run: Uuid) -> String {
    events
        .iter()
        .filter_map(|event| match &event.event {
            Event::UserMessageCreated(created) if created.run_id == run => created.message.text.as_deref(),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The tool result as the model reads it.
fn result_content(result: &ToolResult) -> String {
    serde_json::json!({ "status": result.status, "code": result.code, "result": result.result }).to_string()
}

/// The answer for a call whose result was never recorded.
fn missing_content(started: bool) -> String {
    if started {
        r#"{"status":"outcome_unknown","code":"tool.outcome_unknown","result":{"error":"the action was started but its outcome was never recorded; it may have taken effect"}}"#.to_owned()
    } else {
        r#"{"status":"not_run"}"#.to_owned()
    }
}

/// A call's identity: call ids are only unique within a run (some servers reuse them).
type CallKey<'a> = (Uuid, &'a str);

/// The conversation so far. A call without a result (its run ended first) is answered so the
/// context stays well-formed: `outcome_unknown` if it had started — its effect may have
/// happened and must not be proposed again blindly — else `not_run`.
pub fn build(events: &[EventRow]) -> Vec<ChatMessage> {
    let mut results: HashMap<CallKey<'_>, String> = HashMap::new();
    let mut started: HashSet<CallKey<'_>> = HashSet::new();
    for event in events {
        match &event.event {
            Event::ToolResult(result) => {
                results.insert((result.run_id, result.call_id.as_str()), result_content(result));
            }
            Event::ToolStarted(call) => {
                started.insert((call.run_id, call.call_id.as_str()));
            }
            _ => {}
        }
    }
    let mut messages = Vec::new();
    for event in events {
        match &event.event {
            Event::UserMessageCreated(created) => messages.push(ChatMessage::User(user_text(&created.message))),
            Event::AssistantMessage(step) => push_step(&mut messages, step, &results, &started),
            _ => {}
        }
    }
    messages
}

/// The model's step, then one answer per call, in order.
fn push_step(
    messages: &mut Vec<ChatMessage>,
    step: &AssistantMessage,
    results: &HashMap<CallKey<'_>, String>,
    started: &HashSet<CallKey<'_>>,
) {
    let calls: Vec<ToolCall> = step
        .tool_calls
        .iter()
        .map(|call| ToolCall {
            id: call.call_id.clone(),
            name: call.tool.clone(),
            // What the worker pinned for the owner (a browser action's page and the website's
            // words) is not the model's: it reads the website only marked, in tool results.
            arguments: crate::browser_tools::as_proposed(&call.tool, &call.arguments),
        })
        .collect();
    let answers: Vec<ChatMessage> = calls
        .iter()
        .map(|call| {
            let key = (step.run_id, call.id.as_str());
            let content = results
                .get(&key)
                .cloned()
                .unwrap_or_else(|| missing_content(started.contains(&key)));
            ChatMessage::Tool {
                call_id: call.id.clone(),
                content,
            }
        })
        .collect();
    messages.push(ChatMessage::Assistant {
        text: step.text.clone(),
        tool_calls: calls,
    });
    messages.extend(answers);
}

#[cfg(test)]
mod tests {
    use super::*;
    use domain::approval::InvocationState;
    use domain::ids::SessionId;
    use serde_json::json;
    use wire::event::{ToolStarted, Trust, UserMessageCreated};

    fn event(seq: i64, event: Event) -> EventRow {
        EventRow {
            session_id: SessionId::from_uuid(Uuid::nil()),
            seq,
            run_id: None,
            event,
            created_at: jiff::Timestamp::UNIX_EPOCH,
        }
    }

    fn run(n: u128) -> Uuid {
        Uuid::from_u128(n)
    }

    fn user(text: &str) -> Event {
        Event::UserMessageCreated(UserMessageCreated {
            run_id: Uuid::nil(),
            message: UserMessage {
                text: Some(text.to_owned()),
                attachments: Vec::new(),
            },
            schedule: None,
        })
    }

    fn step(run: Uuid, call: &str) -> Event {
        Event::AssistantMessage(AssistantMessage {
            run_id: run,
            step: 1,
            text: String::new(),
            tool_calls: vec![wire::event::ToolCall {
                call_id: call.to_owned(),
                tool: "webhook.post".to_owned(),
                arguments: json!({}),
            }],
            usage: wire::event::StepUsage {
                input_tokens: 0,
                output_tokens: 0,
                cost: "0".to_owned(),
            },
        })
    }

    fn result(run: Uuid, call: &str, status: InvocationState, n: u32) -> Event {
        Event::ToolResult(ToolResult {
            run_id: run,
            invocation_id: Uuid::nil(),
            call_id: call.to_owned(),
            tool: "webhook.post".to_owned(),
            status,
            code: None,
            risk: None,
            trust: Trust::ToolOutput,
            result: json!({ "n": n }),
        })
    }

    #[test]
    fn results_follow_their_calls_and_reused_call_ids_stay_apart() {
        let events = vec![
            event(1, user("one")),
            event(2, step(run(1), "call_0")),
            event(3, result(run(1), "call_0", InvocationState::Succeeded, 1)),
            event(4, user("two")),
            event(5, step(run(2), "call_0")),
            event(6, result(run(2), "call_0", InvocationState::Failed, 2)),
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
        assert!(contents[1].contains(r#""status":"failed""#), "{contents:?}");
        assert!(
            matches!(messages[2], ChatMessage::Tool { .. }),
            "a result directly follows its call"
        );
    }

    #[test]
    fn a_started_call_without_result_is_an_unknown_outcome_never_not_run() {
        let events = vec![
            event(1, user("post it")),
            event(2, step(run(1), "call_1")),
            event(
                3,
                Event::ToolStarted(ToolStarted {
                    run_id: run(1),
                    invocation_id: Uuid::nil(),
                    call_id: "call_1".to_owned(),
                    tool: "webhook.post".to_owned(),
                    risk: None,
                }),
            ),
            event(4, step(run(1), "call_2")),
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

//! The offline `scripted` provider: deterministic, for the dev stack, the walkthrough and tests.
//!
//! It answers the latest turn by these rules:
//! - after a tool result: `<tool> returned: <result JSON>` (and calls nothing);
//! - a user message `/tool <name> <JSON arguments>`: calls tool `<name>` with those arguments
//!   (`{}` when omitted); several such lines call their tools one per step, in order, and the
//!   answer after the last result follows the first rule;
//! - a user message `/ask <question>`: asks the owner `<question>` (the `owner.ask` tool);
//! - any other user message: `You said: <text>`.
//!
//! Text is streamed word by word, preceded by one reasoning delta; usage counts four characters
//! as a token.

use serde_json::{Value, json};

use crate::model::{ChatMessage, Completion, Deltas, ModelProvider, ModelRequest, ModelResponse, ToolCall, Usage};

#[derive(Clone, Copy, Debug, Default)]
pub struct Scripted;

fn tokens(text: &str) -> i64 {
    i64::try_from(text.chars().count().div_ceil(4)).unwrap_or(i64::MAX)
}

fn message_text(message: &ChatMessage) -> String {
    match message {
        ChatMessage::System(text) | ChatMessage::User(text) => text.clone(),
        ChatMessage::Assistant { text, tool_calls } => format!("{text}{tool_calls:?}"),
        ChatMessage::Tool { content, .. } => content.clone(),
    }
}

impl Scripted {
    /// The response to `request`, without streaming.
    pub fn respond(request: &ModelRequest) -> (String, Vec<ToolCall>) {
        let step = request
            .messages
            .iter()
            .filter(|m| matches!(m, ChatMessage::Assistant { .. }))
            .count()
            + 1;
        let last_user = request.messages.iter().rposition(|m| matches!(m, ChatMessage::User(_)));
        let tool_lines: Vec<&str> = match last_user.map(|index| &request.messages[index]) {
            Some(ChatMessage::User(text)) => text
                .lines()
                .map(str::trim)
                .filter(|line| line.starts_with("/tool "))
                .collect(),
            _ => Vec::new(),
        };
        let answered = last_user.map_or(0, |index| {
            request.messages[index..]
                .iter()
                .filter(|m| matches!(m, ChatMessage::Tool { .. }))
                .count()
        });
        if answered > 0 && answered < tool_lines.len() {
            return (String::new(), vec![Scripted::tool_call(tool_lines[answered], step)]);
        }
        match request.messages.last() {
            Some(ChatMessage::Tool { call_id, content }) => {
                let tool = request
                    .messages
                    .iter()
                    .rev()
                    .find_map(|message| match message {
                        ChatMessage::Assistant { tool_calls, .. } => tool_calls
                            .iter()
                            .find(|call| &call.id == call_id)
                            .map(|call| call.name.clone()),
                        _ => None,
                    })
                    .unwrap_or_else(|| "the tool".to_owned());
                (format!("{tool} returned: {content}"), Vec::new())
            }
            Some(ChatMessage::User(text)) => {
                let text = text.trim();
                if let Some(first) = tool_lines.first() {
                    (String::new(), vec![Scripted::tool_call(first, step)])
                } else if let Some(question) = text.strip_prefix("/ask ") {
                    let call = ToolCall {
                        id: format!("call_{step}_1"),
                        name: "owner.ask".to_owned(),
                        arguments: json!({ "question": question.trim() }),
                    };
                    (String::new(), vec![call])
                } else {
                    (format!("You said: {text}"), Vec::new())
                }
            }
            _ => ("Nothing to answer.".to_owned(), Vec::new()),
        }
    }

    /// The call a `/tool <name> <JSON>` line asks for.
    fn tool_call(line: &str, step: usize) -> ToolCall {
        let rest = line.trim_start_matches("/tool ").trim();
        let (name, arguments) = rest.split_once(' ').unwrap_or((rest, "{}"));
        let arguments: Value = serde_json::from_str(arguments).unwrap_or_else(|_| json!({}));
        ToolCall {
            id: format!("call_{step}_1"),
            name: name.to_owned(),
            arguments,
        }
    }
}

impl ModelProvider for Scripted {
    fn complete<'a>(&'a self, request: &'a ModelRequest, deltas: &'a dyn Deltas) -> Completion<'a> {
        Box::pin(async move {
            let (text, tool_calls) = Scripted::respond(request);
            deltas.reasoning("Reading the latest message.");
            for (index, word) in text.split(' ').enumerate() {
                deltas.text(&if index == 0 {
                    word.to_owned()
                } else {
                    format!(" {word}")
                });
            }
            let input = request
                .messages
                .iter()
                .map(|message| tokens(&message_text(message)))
                .sum();
            let output = tokens(&text)
                + tool_calls
                    .iter()
                    .map(|call| tokens(&call.arguments.to_string()))
                    .sum::<i64>();
            Ok(ModelResponse {
                text,
                tool_calls,
                usage: Usage {
                    input_tokens: input,
                    output_tokens: output,
                    reported: true,
                },
            })
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(messages: Vec<ChatMessage>) -> ModelRequest {
        ModelRequest {
            model: "scripted-1".into(),
            reasoning_effort: None,
            messages,
            tools: Vec::new(),
            max_output_tokens: None,
        }
    }

    #[test]
    fn follows_its_documented_rules() {
        let (text, calls) = Scripted::respond(&request(vec![ChatMessage::User("hello".into())]));
        assert_eq!((text.as_str(), calls.len()), ("You said: hello", 0));

        let (_, calls) = Scripted::respond(&request(vec![ChatMessage::User(
            r#"/tool notes.add {"text": "milk"}"#.into(),
        )]));
        assert_eq!(
            calls,
            vec![ToolCall {
                id: "call_1_1".into(),
                name: "notes.add".into(),
                arguments: json!({ "text": "milk" })
            }]
        );

        let two = "/tool notes.list\n/tool notes.add {\"text\": \"b\"}";
        let list = ToolCall {
            id: "call_1_1".into(),
            name: "notes.list".into(),
            arguments: json!({}),
        };
        let (_, calls) = Scripted::respond(&request(vec![
            ChatMessage::User(two.into()),
            ChatMessage::Assistant {
                text: String::new(),
                tool_calls: vec![list],
            },
            ChatMessage::Tool {
                call_id: "call_1_1".into(),
                content: "{}".into(),
            },
        ]));
        assert_eq!(
            (calls[0].name.as_str(), &calls[0].arguments),
            ("notes.add", &json!({ "text": "b" })),
            "the second line next"
        );

        let (_, calls) = Scripted::respond(&request(vec![ChatMessage::User("/ask Which day?".into())]));
        assert_eq!(
            (calls[0].name.as_str(), &calls[0].arguments),
            ("owner.ask", &json!({ "question": "Which day?" }))
        );

        let call = ToolCall {
            id: "call_1_1".into(),
            name: "notes.list".into(),
            arguments: json!({}),
        };
        let (text, calls) = Scripted::respond(&request(vec![
            ChatMessage::User("/tool notes.list".into()),
            ChatMessage::Assistant {
                text: String::new(),
                tool_calls: vec![call],
            },
            ChatMessage::Tool {
                call_id: "call_1_1".into(),
                content: r#"{"notes":[]}"#.into(),
            },
        ]));
        assert_eq!(
            (text.as_str(), calls.len()),
            (r#"notes.list returned: {"notes":[]}"#, 0)
        );
    }
}

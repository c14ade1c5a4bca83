//! A client for any OpenAI-compatible Chat Completions API, streaming: text and reasoning
//! deltas are relayed as they arrive, tool calls are assembled from their fragments, and usage
//! comes from the final chunk (`stream_options.include_usage`).
//!
//! Tool names travel with `.` written as `__` (function names allow only `[A-Za-z0-9_-]`).

use std::sync::Arc;

use futures_util::StreamExt;
use serde_json::{Value, json};

use crate::endpoint::OpenAiEndpoint;
use crate::model::{
    ChatMessage, Completion, Deltas, ModelError, ModelProvider, ModelRequest, ModelResponse, ToolCall, Usage,
};

pub struct OpenAi {
    endpoint: OpenAiEndpoint,
    http: reqwest::Client,
}

/// The provider for `endpoint`.
pub fn provider(endpoint: OpenAiEndpoint, http: reqwest::Client) -> Arc<dyn ModelProvider> {
    Arc::new(OpenAi { endpoint, http })
}

fn wire_name(name: &str) -> String {
    name.replace('.', "__")
}

fn message(message: &ChatMessage) -> Value {
    match message {
        ChatMessage::System(text) => json!({ "role": "system", "content": text }),
        ChatMessage::User(text) => json!({ "role": "user", "content": text }),
        ChatMessage::Assistant { text, tool_calls } => {
            let mut value =
                json!({ "role": "assistant", "content": if text.is_empty() { Value::Null } else { json!(text) } });
            if !tool_calls.is_empty() {
                value["tool_calls"] = tool_calls
                    .iter()
                    .map(|call| {
                        json!({ "id": call.id, "type": "function",
                                "function": { "name": wire_name(&call.name), "arguments": call.arguments.to_string() } })
                    })
                    .collect();
            }
            value
        }
        ChatMessage::Tool { call_id, content } => {
            json!({ "role": "tool", "tool_call_id": call_id, "content": content })
        }
    }
}

/// The request body for `request`.
pub fn body(request: &ModelRequest) -> Value {
    let mut body = json!({
        "model": request.model,
        "stream": true,
        "stream_options": { "include_usage": true },
        "messages": request.messages.iter().map(message).collect::<Vec<_>>(),
    });
    if !request.tools.is_empty() {
        body["tools"] = request
            .tools
            .iter()
            .map(|tool| {
                json!({ "type": "function", "function": {
                    "name": wire_name(&tool.name), "description": tool.description, "parameters": tool.parameters } })
            })
            .collect();
    }
    if let Some(effort) = &request.reasoning_effort {
        body["reasoning_effort"] = json!(effort);
    }
    if let Some(most) = request.max_output_tokens {
        body["max_tokens"] = json!(most);
    }
    body
}

/// A tool call being assembled from streamed fragments.
#[derive(Default)]
struct PartialCall {
    id: String,
    name: String,
    arguments: String,
}

/// Accumulates a streamed response.
#[derive(Default)]
struct Assembly {
    text: String,
    calls: Vec<PartialCall>,
    usage: Usage,
    /// Whether a choice reported why it finished; a stream that ends without it (or `[DONE]`)
    /// was cut short.
    finished: bool,
}

impl Assembly {
    fn chunk(&mut self, chunk: &Value, deltas: &dyn Deltas) -> Result<(), ModelError> {
        if let Some(error) = chunk.get("error") {
            return Err(ModelError::Protocol(format!("stream error: {error}")));
        }
        if let Some(usage) = chunk.get("usage").filter(|usage| usage.is_object()) {
            self.usage = Usage {
                input_tokens: usage["prompt_tokens"].as_i64().unwrap_or_default(),
                output_tokens: usage["completion_tokens"].as_i64().unwrap_or_default(),
                reported: true,
            };
        }
        let Some(delta) = chunk["choices"].get(0).map(|choice| &choice["delta"]) else {
            return Ok(());
        };
        if let Some(text) = delta["content"].as_str() {
            self.text.push_str(text);
            deltas.text(text);
        }
        for key in ["reasoning_content", "reasoning"] {
            if let Some(reasoning) = delta[key].as_str() {
                deltas.reasoning(reasoning);
            }
        }
        for fragment in delta["tool_calls"].as_array().into_iter().flatten() {
            let index = fragment["index"].as_u64().unwrap_or_default() as usize;
            if index > 128 {
                return Err(ModelError::Protocol("tool call index out of range".into()));
            }
            while self.calls.len() <= index {
                self.calls.push(PartialCall::default());
            }
            let call = &mut self.calls[index];
            // Some servers repeat the id and name in every fragment: they are set once.
            if let Some(id) = fragment["id"].as_str().filter(|id| !id.is_empty())
                && call.id.is_empty()
            {
                call.id = id.to_owned();
            }
            if let Some(name) = fragment["function"]["name"].as_str().filter(|name| !name.is_empty())
                && call.name.is_empty()
            {
                call.name = name.to_owned();
            }
            if let Some(arguments) = fragment["function"]["arguments"].as_str() {
                call.arguments.push_str(arguments);
            }
        }
        Ok(())
    }

    fn finish(self, request: &ModelRequest) -> Result<ModelResponse, ModelError> {
        let mut tool_calls = Vec::with_capacity(self.calls.len());
        for call in self.calls {
            let arguments = if call.arguments.trim().is_empty() {
                json!({})
            } else {
                serde_json::from_str(&call.arguments)
                    .map_err(|error| ModelError::Protocol(format!("tool call arguments are not JSON: {error}")))?
            };
            let name = request
                .tools
                .iter()
                .find(|tool| wire_name(&tool.name) == call.name)
                .map_or(call.name.clone(), |tool| tool.name.clone());
            tool_calls.push(ToolCall {
                id: call.id,
                name,
                arguments,
            });
        }
        Ok(ModelResponse {
            text: self.text,
            tool_calls,
            usage: self.usage,
        })
    }
}

impl ModelProvider for OpenAi {
    fn complete<'a>(&'a self, request: &'a ModelRequest, deltas: &'a dyn Deltas) -> Completion<'a> {
        Box::pin(self.stream_completion(request, deltas))
    }
}

impl OpenAi {
    /// One streamed Chat Completions request, its deltas passed on as they arrive.
    async fn stream_completion(
        &self,
        request: &ModelRequest,
        deltas: &dyn Deltas,
    ) -> Result<ModelResponse, ModelError> {
        let mut call = self
            .http
            .post(format!("{}/chat/completions", self.endpoint.base_url))
            .json(&body(request));
        if let Some(key) = &self.endpoint.api_key {
            call = call.bearer_auth(key);
        }
        let response = call
            .send()
            .await
            .map_err(|error| ModelError::Transport(error.without_url().to_string()))?;
        let status = response.status();
        if !status.is_success() {
            let detail = response.text().await.unwrap_or_default();
            let detail: String = detail.chars().take(500).collect();
            return Err(ModelError::Status {
                status: status.as_u16(),
                detail,
            });
        }
        let mut assembly = Assembly::default();
        // Bytes, not text, until a whole line is in: a multi-byte character may be split
        // across network chunks.
        let mut pending: Vec<u8> = Vec::new();
        let mut stream = response.bytes_stream();
        loop {
            let next = stream.next().await;
            let ended = next.is_none();
            if let Some(bytes) = next {
                let bytes = bytes.map_err(|error| ModelError::Transport(error.without_url().to_string()))?;
                pending.extend_from_slice(&bytes);
            } else if !pending.is_empty() {
                pending.push(b'\n');
            }
            while let Some(end) = pending.iter().position(|byte| *byte == b'\n') {
                let line: Vec<u8> = pending.drain(..=end).collect();
                let line = std::str::from_utf8(&line)
                    .map_err(|_| ModelError::Protocol("the stream is not UTF-8".into()))?
                    .trim();
                let Some(data) = line.strip_prefix("data:").map(str::trim) else {
                    continue;
                };
                if data == "[DONE]" {
                    return assembly.finish(request);
                }
                let chunk: Value = serde_json::from_str(data)
                    .map_err(|error| ModelError::Protocol(format!("a stream chunk is not JSON: {error}")))?;
                assembly.chunk(&chunk, deltas)?;
            }
            if ended {
                break;
            }
        }
        // Servers that omit `[DONE]` still report a finish reason; without either the
        // answer was cut short.
        if assembly.finished {
            assembly.finish(request)
        } else {
            Err(ModelError::Transport(
                "the stream ended before the answer was complete".into(),
            ))
        }
    }
}

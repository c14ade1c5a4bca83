//! A model provider on 127.0.0.1 speaking the OpenAI Chat Completions streaming wire format
//! (`POST /v1/chat/completions`, answered as Server-Sent Events ending `data: [DONE]`).
//!
//! The test says what each request is answered with ([`Reply`]); the server records every
//! request (its `Authorization` header and JSON body) and signals each arrival.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::{Value, json};
use tokio::sync::Notify;

/// How one request is answered.
#[derive(Debug, Default)]
pub struct Reply {
    /// The chunks, each sent as one `data:` event, before `data: [DONE]`.
    pub frames: Vec<Value>,
    /// Never answer (the request hangs until the client gives up or the server stops).
    pub hold: bool,
    /// Send the stream in pieces of this many bytes, a millisecond apart, so that lines and
    /// multi-byte characters are split across network reads.
    pub piece_bytes: Option<usize>,
}

impl Reply {
    pub fn frames(frames: Vec<Value>) -> Reply {
        Reply {
            frames,
            ..Reply::default()
        }
    }

    /// A request that is never answered.
    pub fn held() -> Reply {
        Reply {
            hold: true,
            ..Reply::default()
        }
    }

    pub fn in_pieces(self, bytes: usize) -> Reply {
        Reply {
            piece_bytes: Some(bytes),
            ..self
        }
    }
}

/// The chunk that ends a choice with `reason` (`stop`, `tool_calls`).
pub fn finish(reason: &str) -> Value {
    json!({ "choices": [{ "index": 0, "delta": {}, "finish_reason": reason }] })
}

/// The chunk reporting the request's token usage.
pub fn usage(prompt_tokens: u64, completion_tokens: u64) -> Value {
    json!({ "choices": [], "usage": { "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens } })
}

/// A chunk of the assistant's text.
pub fn content(text: &str) -> Value {
    json!({ "choices": [{ "index": 0, "delta": { "content": text } }] })
}

type Answer = dyn Fn(usize, &Value) -> Reply + Send + Sync;

struct Seen {
    requests: Mutex<Vec<(Option<String>, Value)>>,
    arrived: Notify,
    answer: Box<Answer>,
}

/// The running server; it stops when dropped.
pub struct FakeModel {
    /// The base URL clients are configured with (`http://127.0.0.1:port/v1`).
    pub url: String,
    seen: Arc<Seen>,
    _server: crate::Served,
}

async fn completions(
    State(seen): State<Arc<Seen>>,
    headers: HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    let authorization = headers
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let number = {
        let mut requests = seen.requests.lock().expect("lock");
        requests.push((authorization, body.clone()));
        requests.len()
    };
    seen.arrived.notify_one();
    let reply = (seen.answer)(number, &body);
    if reply.hold {
        std::future::pending::<()>().await;
    }
    let mut text: String = reply.frames.iter().map(|frame| format!("data: {frame}\n\n")).collect();
    text.push_str("data: [DONE]\n\n");
    let headers = [("content-type", "text/event-stream")];
    match reply.piece_bytes {
        None => (headers, text).into_response(),
        Some(size) => {
            let pieces: Vec<Vec<u8>> = text.into_bytes().chunks(size.max(1)).map(<[u8]>::to_vec).collect();
            let stream = futures_util::StreamExt::then(futures_util::stream::iter(pieces), |piece| async move {
                tokio::time::sleep(Duration::from_millis(1)).await;
                Ok::<_, std::convert::Infallible>(piece)
            });
            (headers, axum::body::Body::from_stream(stream)).into_response()
        }
    }
}

impl FakeModel {
    /// Starts the server; `answer` is given each request's number (from 1) and body.
    pub async fn start(answer: impl Fn(usize, &Value) -> Reply + Send + Sync + 'static) -> FakeModel {
        let seen = Arc::new(Seen {
            requests: Mutex::new(Vec::new()),
            arrived: Notify::new(),
            answer: Box::new(answer),
        });
        let app = axum::Router::new()
            .route("/v1/chat/completions", axum::routing::post(completions))
            .with_state(seen.clone());
        let served = crate::serve(app).await;
        FakeModel {
            url: served.url("/v1"),
            seen,
            _server: served,
        }
    }

    /// (Authorization header, body) of every request so far, in order of arrival.
    pub fn requests(&self) -> Vec<(Option<String>, Value)> {
        self.seen.requests.lock().expect("lock").clone()
    }

    /// The body of every request so far.
    pub fn bodies(&self) -> Vec<Value> {
        self.requests().into_iter().map(|(_, body)| body).collect()
    }

    /// Signalled at each request's arrival.
    pub fn arrived(&self) -> &Notify {
        &self.seen.arrived
    }
}

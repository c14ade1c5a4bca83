//! The call provider's HTTP API, over rustls, authenticated with the API key in the
//! `authorization` header.
//!
//! | Use | Request |
//! |---|---|
//! | number settings | `POST /v1/inbound/{phone_number}`, read back with `GET /v1/inbound/{phone_number}` |
//! | dispatch an outbound call | `POST /v1/calls` (sent at most once, never retried) |
//! | a call's detail | `GET /v1/calls/{call_id}` |
//! | history (reconciliation) | `GET /v1/calls?to_number=…&start_date=…` |
//! | end a call | `POST /v1/calls/{call_id}/stop` |
//!
//! Redirects are not followed; bodies are bounded; no body is logged.

use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde::Deserialize;
use serde_json::Value;

use crate::key::Endpoint;
use crate::script::{NumberSettings, SettingsMismatch};
use domain::call::CallConfiguration;

/// The largest response body read.
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// Why a provider request did not give an answer.
#[derive(Debug, thiserror::Error)]
pub enum CallProvError {
    /// The provider answered and refused: nothing happened. `message` is the provider's own
    /// words, which may echo a number: never shown in logs (the status is).
    #[error("the call provider refused the request (status {status})")]
    Refused { status: u16, message: String },
    /// The request may or may not have taken effect (no answer, a server error, an unreadable
    /// answer to a dispatch). A dispatch in this state is reconciled from history, never resent.
    #[error("the call provider's answer is unknown: {0}")]
    Uncertain(String),
    /// The request never left (connection refused, DNS): nothing happened.
    #[error("the call provider is unreachable: {0}")]
    Unreachable(String),
    /// The provider answered with something this client cannot read (where, never what).
    #[error("the call provider's answer is not readable: {0}")]
    Malformed(String),
    #[error("{0}")]
    Settings(#[from] SettingsMismatch),
}

/// An accepted dispatch: the provider's id of the call (accepted, not answered).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Dispatch {
    pub call_id: String,
}

/// One turn of a transcript.
#[derive(Clone, Debug, PartialEq, Eq, Deserialize, serde::Serialize)]
pub struct Turn {
    /// `assistant`, `user` (the other person) or `agent-action`.
    pub user: String,
    pub text: String,
}

/// A call as the provider reports it.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct CallDetail {
    pub call_id: String,
    #[serde(default)]
    pub to: Option<String>,
    #[serde(default)]
    pub from: Option<String>,
    #[serde(default)]
    pub inbound: bool,
    /// Whether the call is over.
    #[serde(default)]
    pub completed: bool,
    #[serde(default)]
    pub status: Option<String>,
    /// Length in minutes.
    #[serde(default)]
    pub call_length: Option<f64>,
    /// `human`, `voicemail`, `no-answer`, …
    #[serde(default)]
    pub answered_by: Option<String>,
    #[serde(default)]
    pub created_at: Option<String>,
    #[serde(default)]
    pub started_at: Option<String>,
    #[serde(default)]
    pub end_at: Option<String>,
    #[serde(default)]
    pub transcripts: Vec<Turn>,
    #[serde(default)]
    pub concatenated_transcript: Option<String>,
    #[serde(default)]
    pub summary: Option<String>,
    #[serde(default)]
    pub metadata: Option<Value>,
    #[serde(default)]
    pub error_message: Option<String>,
}

impl CallDetail {
    /// The local reference a dispatch tagged the call with.
    pub fn reference(&self) -> Option<&str> {
        self.metadata.as_ref()?.get("steward_call")?.as_str()
    }
}

/// One call in the provider's history.
#[derive(Clone, Debug, PartialEq, Deserialize)]
pub struct HistoryEntry {
    pub call_id: String,
    #[serde(default)]
    pub to: Option<String>,
    #[serde(default)]
    pub created_at: Option<String>,
    #[serde(default)]
    pub completed: bool,
    #[serde(default)]
    pub metadata: Option<Value>,
}

impl HistoryEntry {
    pub fn reference(&self) -> Option<&str> {
        self.metadata.as_ref()?.get("steward_call")?.as_str()
    }
}

#[derive(Deserialize)]
struct History {
    #[serde(default)]
    calls: Vec<HistoryEntry>,
}

/// An answer of the wrong shape, described by where and what kind of mismatch, never by the
/// value (which may be a transcript).
fn unreadable(error: serde_json::Error) -> CallProvError {
    CallProvError::Malformed(format!(
        "{:?} mismatch at line {}, column {}",
        error.classify(),
        error.line(),
        error.column()
    ))
}

/// The provider client.
#[derive(Clone, Debug)]
pub struct Client {
    endpoint: Endpoint,
    http: reqwest::Client,
}

/// Percent-encodes a path segment or query value (E.164 numbers carry `+`).
fn encode(text: &str) -> String {
    text.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

impl Client {
    pub fn new(endpoint: Endpoint) -> Client {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .timeout(Duration::from_secs(30))
            .build()
            .expect("the HTTP client builds with rustls");
        Client { endpoint, http }
    }

    fn url(&self, path: &str) -> String {
        format!("{}{path}", self.endpoint.base_url)
    }

    /// Sends one request and reads its JSON answer. `once` marks a request that must not be
    /// assumed not to have happened when its answer is lost (a dispatch).
    async fn request(&self, method: Method, path: &str, body: Option<&Value>) -> Result<Value, CallProvError> {
        let mut request = self
            .http
            .request(method, self.url(path))
            .header("authorization", self.endpoint.key.expose());
        if let Some(body) = body {
            request = request.json(body);
        }
        let mut response = request.send().await.map_err(|error| {
            if error.is_connect() {
                CallProvError::Unreachable(error.without_url().to_string())
            } else {
                CallProvError::Uncertain(error.without_url().to_string())
            }
        })?;
        let status = response.status();
        let mut bytes = Vec::new();
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => {
                    if bytes.len() + chunk.len() > MAX_BODY_BYTES {
                        return Err(CallProvError::Malformed("the answer is too large".into()));
                    }
                    bytes.extend_from_slice(&chunk);
                }
                Ok(None) => break,
                Err(error) => return Err(CallProvError::Uncertain(error.without_url().to_string())),
            }
        }
        if status.is_server_error() || status == StatusCode::TOO_MANY_REQUESTS && bytes.is_empty() {
            return Err(CallProvError::Uncertain(format!("status {}", status.as_u16())));
        }
        let value: Option<Value> = serde_json::from_slice(&bytes).ok();
        if !status.is_success() {
            let message = value
                .as_ref()
                .and_then(|value| value.get("message").or_else(|| value.get("error")))
                .and_then(Value::as_str)
                .map(|text| text.chars().take(200).collect())
                .unwrap_or_else(|| status.canonical_reason().unwrap_or("error").to_owned());
            return Err(CallProvError::Refused {
                status: status.as_u16(),
                message,
            });
        }
        value.ok_or_else(|| CallProvError::Malformed("not JSON".into()))
    }

    /// Pushes the number settings for `config`, reads them back and compares: a member the
    /// provider ignored or refused (above all a clearing one) blocks activation.
    pub async fn activate_number(&self, config: &CallConfiguration) -> Result<NumberSettings, CallProvError> {
        let settings = NumberSettings::for_configuration(config);
        let path = format!("/v1/inbound/{}", encode(&config.phone_number));
        self.request(Method::POST, &path, Some(&Value::Object(settings.body.clone())))
            .await?;
        let read = self.request(Method::GET, &path, None).await?;
        settings.check_read_back(&read)?;
        Ok(settings)
    }

    /// Dispatches an outbound call, once. `Ok` means the provider accepted it (not that anyone
    /// answered); [`CallProvError::Uncertain`] means it may have been placed.
    pub async fn dispatch(&self, request: &Value) -> Result<Dispatch, CallProvError> {
        let answer = match self.request(Method::POST, "/v1/calls", Some(request)).await {
            // An unreadable answer to a dispatch leaves the call's fate unknown.
            Err(CallProvError::Malformed(reason)) => return Err(CallProvError::Uncertain(reason)),
            other => other?,
        };
        match answer.get("call_id").and_then(Value::as_str) {
            Some(call_id) if !call_id.is_empty() => Ok(Dispatch {
                call_id: call_id.to_owned(),
            }),
            _ => Err(CallProvError::Uncertain("the answer names no call".into())),
        }
    }

    /// A call's detail.
    pub async fn call(&self, call_id: &str) -> Result<CallDetail, CallProvError> {
        let value = self
            .request(Method::GET, &format!("/v1/calls/{}", encode(call_id)), None)
            .await?;
        serde_json::from_value(value).map_err(unreadable)
    }

    /// Calls to `to` created on or after `since` (an RFC 3339 date or time), newest first.
    pub async fn history(&self, to: &str, since: &str) -> Result<Vec<HistoryEntry>, CallProvError> {
        let path = format!(
            "/v1/calls?to_number={}&start_date={}&limit=100",
            encode(to),
            encode(since)
        );
        let value = self.request(Method::GET, &path, None).await?;
        let history: History = serde_json::from_value(value).map_err(unreadable)?;
        Ok(history.calls)
    }

    /// Ends a call that is still running.
    pub async fn stop(&self, call_id: &str) -> Result<(), CallProvError> {
        self.request(Method::POST, &format!("/v1/calls/{}/stop", encode(call_id)), None)
            .await
            .map(drop)
    }
}

//! A call provider on 127.0.0.1 speaking the provider's HTTP API as `callprov::Client` uses it:
//! number settings (`POST`/`GET /v1/inbound/{phone_number}`), dispatch (`POST /v1/calls`), a
//! call's detail (`GET /v1/calls/{call_id}`), history (`GET /v1/calls?to_number=&start_date=`)
//! and termination (`POST /v1/calls/{call_id}/stop`), authenticated with the key in the
//! `authorization` header. The test decides how dispatches are answered ([`DispatchMode`]),
//! which number-setting members the provider ignores, finishes calls with a transcript and
//! summary, and signs webhook bodies as the provider does ([`sign`]).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

/// How the provider answers a dispatch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DispatchMode {
    /// Queue the call and answer with its id.
    Accept,
    /// Refuse it (400) without placing it.
    Refuse,
    /// Place the call, then answer 502: the client cannot know it was placed.
    PlaceThenFail,
    /// Answer 502 without placing the call: the client cannot know it was not placed.
    FailWithoutPlacing,
}

/// One request the provider received.
#[derive(Clone, Debug)]
pub struct Request {
    pub method: &'static str,
    pub path: String,
    pub authorization: Option<String>,
    pub body: Value,
}

#[derive(Default)]
struct Inner {
    numbers: BTreeMap<String, serde_json::Map<String, Value>>,
    calls: Vec<Value>,
    requests: Vec<Request>,
    ignored: BTreeSet<String>,
    dispatch: Option<DispatchMode>,
}

struct Shared {
    key: String,
    inner: Mutex<Inner>,
}

/// The running stand-in; it stops when dropped.
pub struct FakeCallProvider {
    /// The base URL clients are configured with (`http://127.0.0.1:port`).
    pub url: String,
    shared: Arc<Shared>,
    _server: crate::Served,
}

/// The provider's webhook signature of `body`: lowercase hex HMAC-SHA256 under `secret`.
pub fn sign(secret: &[u8], body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret).expect("HMAC accepts a key of any length");
    mac.update(body);
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

/// The post-call webhook body the provider delivers for `call_id`.
pub fn webhook_body(call_id: &str) -> Vec<u8> {
    json!({ "call_id": call_id, "status": "completed", "completed": true })
        .to_string()
        .into_bytes()
}

fn authorized(shared: &Shared, headers: &HeaderMap, method: &'static str, path: String, body: Value) -> bool {
    let authorization = headers
        .get("authorization")
        .and_then(|value| value.to_str().ok())
        .map(str::to_owned);
    let ok = authorization.as_deref() == Some(shared.key.as_str());
    shared.inner.lock().expect("lock").requests.push(Request {
        method,
        path,
        authorization,
        body,
    });
    ok
}

fn refused(status: StatusCode, message: &str) -> Response {
    (status, axum::Json(json!({ "status": "error", "message": message }))).into_response()
}

async fn update_number(
    State(shared): State<Arc<Shared>>,
    Path(number): Path<String>,
    headers: HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    if !authorized(&shared, &headers, "POST", format!("/v1/inbound/{number}"), body.clone()) {
        return refused(StatusCode::UNAUTHORIZED, "invalid api key");
    }
    let mut inner = shared.inner.lock().expect("lock");
    let ignored = inner.ignored.clone();
    let Some(settings) = inner.numbers.get_mut(&number) else {
        return refused(StatusCode::NOT_FOUND, "the number is not on this account");
    };
    for (name, value) in body.as_object().into_iter().flatten() {
        if !ignored.contains(name) {
            settings.insert(name.clone(), value.clone());
        }
    }
    let mut answer = settings.clone();
    answer.insert("phone_number".into(), json!(number));
    answer.insert("status".into(), json!("success"));
    axum::Json(Value::Object(answer)).into_response()
}

async fn read_number(State(shared): State<Arc<Shared>>, Path(number): Path<String>, headers: HeaderMap) -> Response {
    if !authorized(&shared, &headers, "GET", format!("/v1/inbound/{number}"), Value::Null) {
        return refused(StatusCode::UNAUTHORIZED, "invalid api key");
    }
    let inner = shared.inner.lock().expect("lock");
    match inner.numbers.get(&number) {
        None => refused(StatusCode::NOT_FOUND, "the number is not on this account"),
        Some(settings) => {
            let mut answer = settings.clone();
            answer.insert("phone_number".into(), json!(number));
            axum::Json(Value::Object(answer)).into_response()
        }
    }
}

/// The time `offset` seconds from now, as the provider writes times.
fn timestamp(offset: u64) -> String {
    (jiff::Timestamp::now() + jiff::SignedDuration::from_secs(offset as i64)).to_string()
}

async fn dispatch(
    State(shared): State<Arc<Shared>>,
    headers: HeaderMap,
    axum::Json(body): axum::Json<Value>,
) -> Response {
    if !authorized(&shared, &headers, "POST", "/v1/calls".into(), body.clone()) {
        return refused(StatusCode::UNAUTHORIZED, "invalid api key");
    }
    let mut inner = shared.inner.lock().expect("lock");
    let mode = inner.dispatch.unwrap_or(DispatchMode::Accept);
    match mode {
        DispatchMode::Refuse => return refused(StatusCode::BAD_REQUEST, "the number cannot be called"),
        DispatchMode::FailWithoutPlacing => return refused(StatusCode::BAD_GATEWAY, "upstream error"),
        _ => {}
    }
    let call_id = format!("call-{}", uuid::Uuid::new_v4());
    let call = json!({
        "call_id": call_id,
        "to": body["phone_number"],
        "from": body["from"],
        "inbound": false,
        "completed": false,
        "status": "queued",
        "queue_status": "queued",
        "created_at": timestamp(0),
        "max_duration": body["max_duration"],
        "first_sentence": body["first_sentence"],
        "task": body["task"],
        "metadata": body.get("metadata").cloned().unwrap_or(Value::Null),
        "transcripts": [],
    });
    inner.calls.push(call);
    match mode {
        DispatchMode::PlaceThenFail => refused(StatusCode::BAD_GATEWAY, "upstream error"),
        _ => axum::Json(json!({ "status": "success", "message": "Call successfully queued.", "call_id": call_id }))
            .into_response(),
    }
}

async fn detail(State(shared): State<Arc<Shared>>, Path(call_id): Path<String>, headers: HeaderMap) -> Response {
    if !authorized(&shared, &headers, "GET", format!("/v1/calls/{call_id}"), Value::Null) {
        return refused(StatusCode::UNAUTHORIZED, "invalid api key");
    }
    let inner = shared.inner.lock().expect("lock");
    match inner.calls.iter().find(|call| call["call_id"] == call_id.as_str()) {
        None => refused(StatusCode::NOT_FOUND, "no such call"),
        Some(call) => axum::Json(call.clone()).into_response(),
    }
}

async fn history(
    State(shared): State<Arc<Shared>>,
    Query(query): Query<BTreeMap<String, String>>,
    headers: HeaderMap,
) -> Response {
    if !authorized(&shared, &headers, "GET", "/v1/calls".into(), json!(query)) {
        return refused(StatusCode::UNAUTHORIZED, "invalid api key");
    }
    let inner = shared.inner.lock().expect("lock");
    let since = query.get("start_date").cloned().unwrap_or_default();
    let calls: Vec<Value> = inner
        .calls
        .iter()
        .rev()
        .filter(|call| query.get("to_number").is_none_or(|to| call["to"] == to.as_str()))
        .filter(|call| call["created_at"].as_str().unwrap_or_default() >= since.as_str())
        .map(|call| {
            json!({
                "call_id": call["call_id"],
                "to": call["to"],
                "from": call["from"],
                "created_at": call["created_at"],
                "completed": call["completed"],
                "metadata": call["metadata"],
            })
        })
        .collect();
    axum::Json(json!({ "total_count": calls.len(), "count": calls.len(), "calls": calls })).into_response()
}

async fn stop(State(shared): State<Arc<Shared>>, Path(call_id): Path<String>, headers: HeaderMap) -> Response {
    if !authorized(
        &shared,
        &headers,
        "POST",
        format!("/v1/calls/{call_id}/stop"),
        Value::Null,
    ) {
        return refused(StatusCode::UNAUTHORIZED, "invalid api key");
    }
    let mut inner = shared.inner.lock().expect("lock");
    match inner.calls.iter_mut().find(|call| call["call_id"] == call_id.as_str()) {
        None => refused(StatusCode::NOT_FOUND, "no such call"),
        Some(call) => {
            call["completed"] = json!(true);
            call["status"] = json!("completed");
            axum::Json(json!({ "status": "success", "message": "Call ended successfully." })).into_response()
        }
    }
}

impl FakeCallProvider {
    /// Starts the provider for an account whose API key is `key` and which owns `numbers`.
    pub async fn start(key: &str, numbers: &[&str]) -> FakeCallProvider {
        let inner = Inner {
            numbers: numbers
                .iter()
                .map(|number| {
                    // A number that was set up by hand once: a pathway and a tool to clear.
                    let settings = json!({ "pathway_id": "pw-legacy", "tools": ["tool-legacy"], "prompt": "" });
                    let Value::Object(settings) = settings else {
                        unreachable!("an object")
                    };
                    ((*number).to_owned(), settings)
                })
                .collect(),
            ..Inner::default()
        };
        let shared = Arc::new(Shared {
            key: key.to_owned(),
            inner: Mutex::new(inner),
        });
        let app = axum::Router::new()
            .route("/v1/inbound/{number}", post(update_number).get(read_number))
            .route("/v1/calls", post(dispatch).get(history))
            .route("/v1/calls/{call_id}", get(detail))
            .route("/v1/calls/{call_id}/stop", post(stop))
            .with_state(shared.clone());
        let served = crate::serve(app).await;
        FakeCallProvider {
            url: served.url(""),
            shared,
            _server: served,
        }
    }

    /// Every request so far, in order of arrival.
    pub fn requests(&self) -> Vec<Request> {
        self.shared.inner.lock().expect("lock").requests.clone()
    }

    /// How dispatches are answered from now on.
    pub fn set_dispatch(&self, mode: DispatchMode) {
        self.shared.inner.lock().expect("lock").dispatch = Some(mode);
    }

    /// Makes the provider silently keep its old value of `member` on number-setting updates.
    pub fn ignore_member(&self, member: &str) {
        self.shared
            .inner
            .lock()
            .expect("lock")
            .ignored
            .insert(member.to_owned());
    }

    /// The number's current settings.
    pub fn number(&self, number: &str) -> Option<serde_json::Map<String, Value>> {
        self.shared.inner.lock().expect("lock").numbers.get(number).cloned()
    }

    /// Every call the provider holds (dispatched or inbound), oldest first.
    pub fn calls(&self) -> Vec<Value> {
        self.shared.inner.lock().expect("lock").calls.clone()
    }

    /// An inbound call from `from` to `to` that has ended, with its transcript and summary;
    /// returns its id.
    pub fn inbound_call(&self, from: &str, to: &str, turns: &[(&str, &str)], summary: &str) -> String {
        let mut inner = self.shared.inner.lock().expect("lock");
        let call_id = format!("call-{}", uuid::Uuid::new_v4());
        let call = json!({
            "call_id": call_id,
            "to": to,
            "from": from,
            "inbound": true,
            "completed": true,
            "status": "completed",
            "created_at": timestamp(0),
            "started_at": timestamp(0),
            "end_at": timestamp(90),
            "call_length": 1.5,
            "answered_by": "human",
            "transcripts": turns.iter().map(|(user, text)| json!({ "user": user, "text": text })).collect::<Vec<_>>(),
            "summary": summary,
        });
        inner.calls.push(call);
        call_id
    }

    /// Ends a dispatched call with `turns` and `summary` (`answered_by` human).
    pub fn finish(&self, call_id: &str, turns: &[(&str, &str)], summary: &str) {
        let mut inner = self.shared.inner.lock().expect("lock");
        let call = inner
            .calls
            .iter_mut()
            .find(|call| call["call_id"] == call_id)
            .expect("a call the provider holds");
        call["completed"] = json!(true);
        call["status"] = json!("completed");
        call["answered_by"] = json!("human");
        call["call_length"] = json!(2.0);
        call["end_at"] = json!(timestamp(0));
        call["transcripts"] = json!(
            turns
                .iter()
                .map(|(user, text)| json!({ "user": user, "text": text }))
                .collect::<Vec<_>>()
        );
        call["summary"] = json!(summary);
    }

    /// Forgets a call, as a provider that purged it: its detail answers 404 from now on.
    pub fn forget(&self, call_id: &str) {
        self.shared
            .inner
            .lock()
            .expect("lock")
            .calls
            .retain(|call| call["call_id"] != call_id);
    }

    /// An inbound call from `from` to `to` still in progress; returns its id ([`Self::finish`]
    /// ends it).
    pub fn inbound_call_running(&self, from: &str, to: &str) -> String {
        let mut inner = self.shared.inner.lock().expect("lock");
        let call_id = format!("call-{}", uuid::Uuid::new_v4());
        inner.calls.push(json!({
            "call_id": call_id,
            "to": to,
            "from": from,
            "inbound": true,
            "completed": false,
            "status": "in-progress",
            "created_at": timestamp(0),
            "transcripts": [],
        }));
        call_id
    }

    /// Reports an ended call as running again (a provider that lost its end).
    pub fn reopen(&self, call_id: &str) {
        let mut inner = self.shared.inner.lock().expect("lock");
        if let Some(call) = inner.calls.iter_mut().find(|call| call["call_id"] == call_id) {
            call["completed"] = json!(false);
            call["status"] = json!("in-progress");
        }
    }

    /// Marks a dispatched call as answered and still running.
    pub fn answer(&self, call_id: &str) {
        let mut inner = self.shared.inner.lock().expect("lock");
        if let Some(call) = inner.calls.iter_mut().find(|call| call["call_id"] == call_id) {
            call["status"] = json!("in-progress");
            call["queue_status"] = json!("started");
            call["answered_by"] = json!("human");
        }
    }
}

//! A mail provider for tests: a real HTTP server on 127.0.0.1 speaking the Gmail REST and OAuth
//! token wire formats the service uses — the refresh-token grant, `labels.list`, `threads.list`
//! (with `q`, `includeSpamTrash`, `maxResults` and paging), `threads.get` (`format=metadata`
//! with `metadataHeaders`), `drafts.create` and `messages.send` (both with a base64url RFC 5322
//! `raw`), and for Email mode `users.getProfile`, `history.list` (with `startHistoryId`, paging,
//! and 404 for a start older than the mailbox keeps), `messages.get?format=raw` and
//! `threads.modify`. Each refresh token is a grant of one scope on one mailbox; every call is checked
//! against the scopes Google documents for it, so a tool that used the wrong credential document
//! fails here as it would there.
//!
//! Where the service depends on the provider's habits, it behaves as the provider is reported
//! to: a sent message gets a `Message-ID` of the provider's own (a draft keeps the one it was
//! given), `X-` headers are kept, Spam and Trash are left out of a search unless
//! `includeSpamTrash` (or `in:anywhere`) asks for them, and `after:`/`before:` take Unix seconds.
//!
//! Faults are scripted per test: drop the connection after a send or draft was stored, answer
//! reads with 429, revoke a grant.

mod routes;

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use axum::extract::{Path, Query, State};
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Form, Json, Router};
use base64::Engine;
use serde_json::{Value, json};

use self::routes::*;

pub const READONLY: &str = "https://www.googleapis.com/auth/gmail.readonly";
pub const MODIFY: &str = "https://www.googleapis.com/auth/gmail.modify";
pub const SEND: &str = "https://www.googleapis.com/auth/gmail.send";

/// One stored message.
#[derive(Clone, Debug)]
pub struct StoredMessage {
    pub id: String,
    pub thread_id: String,
    pub label_ids: Vec<String>,
    pub message_id: String,
    pub subject: String,
    pub from: String,
    pub to: Vec<String>,
    pub body: String,
    /// When the provider took it, in Unix seconds.
    pub internal_date: i64,
    /// Its `X-`, `In-Reply-To` and `References` headers, as given.
    pub extra_headers: Vec<(String, String)>,
    /// The message's bytes when it was delivered whole ([`FakeGmail::deliver_raw`]).
    pub raw: Option<Vec<u8>>,
}

/// An RFC 2822 date (UTC) of `seconds` since the epoch, as a `Date` header shows it.
fn rfc2822(seconds: i64) -> String {
    jiff::Timestamp::from_second(seconds)
        .map(|at| at.strftime("%a, %-d %b %Y %H:%M:%S +0000").to_string())
        .unwrap_or_default()
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| i64::try_from(elapsed.as_secs()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}

#[derive(Debug, Default)]
struct Mailbox {
    address: String,
    messages: Vec<StoredMessage>,
    drafts: Vec<(String, String)>,
    /// The mailbox's history id: raised by every change.
    history_id: u64,
    /// History records (`history.list`'s items), oldest first.
    history: Vec<Value>,
    /// The oldest start id still answered; an older one is 404, as the provider does once it
    /// no longer keeps that history.
    history_floor: u64,
}

impl Mailbox {
    /// Stores a new message, recorded in the history.
    fn add(&mut self, message: StoredMessage) {
        self.record("messagesAdded", &message, &[]);
        self.messages.push(message);
    }

    /// Records one change (`messagesAdded`, `labelsAdded` or `labelsRemoved`) of `message`.
    fn record(&mut self, kind: &str, message: &StoredMessage, labels: &[String]) {
        self.history_id += 1;
        let summary = json!({ "id": message.id, "threadId": message.thread_id, "labelIds": message.label_ids });
        let mut item = json!({ "message": summary });
        if kind != "messagesAdded" {
            item["labelIds"] = json!(labels);
        }
        self.history.push(json!({
            "id": self.history_id.to_string(),
            "messages": [summary],
            kind: [item],
        }));
    }
}

/// What the next send (or draft) does after it is stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendFault {
    /// Close the connection without answering.
    DropConnection,
    /// Never answer (a client that gives up or dies leaves the outcome unknown).
    Hold,
    /// Close the connection without storing or answering: the send did not happen.
    DropUnsent,
}

#[derive(Debug, Default)]
struct Inner {
    mailboxes: HashMap<String, Mailbox>,
    /// refresh token → (mailbox, scope)
    grants: HashMap<String, (String, String)>,
    /// access token → (mailbox, scope)
    access: HashMap<String, (String, String)>,
    token_requests: usize,
    /// (mailbox, scope, method and path) of every authorized API call.
    calls: Vec<(String, String, String)>,
    send_fault: Option<SendFault>,
    modify_fault: Option<SendFault>,
    draft_fault: Option<SendFault>,
    /// Sent messages keep the `Message-ID` they were given (the provider's habit is to replace it).
    keep_sent_message_ids: bool,
    read_throttles: usize,
    next_id: u64,
}

/// The running provider. Dropping it stops the server.
pub struct FakeGmail {
    pub base_url: String,
    inner: Arc<Mutex<Inner>>,
    _server: crate::Served,
}

type Shared = Arc<Mutex<Inner>>;

fn lock(inner: &Shared) -> MutexGuard<'_, Inner> {
    inner.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn error(status: StatusCode, message: &str) -> Response {
    (
        status,
        Json(json!({ "error": { "code": status.as_u16(), "message": message, "status": "ERROR" } })),
    )
        .into_response()
}

/// A refused request, answered as the provider's error document.
struct Refused(StatusCode, &'static str);

impl IntoResponse for Refused {
    fn into_response(self) -> Response {
        error(self.0, self.1)
    }
}

impl FakeGmail {
    pub async fn start() -> FakeGmail {
        let inner: Shared = Arc::default();
        let app = Router::new()
            .route("/token", post(token))
            .route("/gmail/v1/users/me/labels", get(labels))
            .route("/gmail/v1/users/me/threads", get(threads))
            .route("/gmail/v1/users/me/threads/{id}", get(thread))
            .route("/gmail/v1/users/me/drafts", post(create_draft))
            .route("/gmail/v1/users/me/messages/send", post(send))
            .route("/gmail/v1/users/me/profile", get(profile))
            .route("/gmail/v1/users/me/history", get(history))
            .route("/gmail/v1/users/me/messages", get(messages))
            .route("/gmail/v1/users/me/messages/{id}", get(message_raw))
            .route("/gmail/v1/users/me/threads/{id}/modify", post(modify_thread))
            .with_state(inner.clone());
        let served = crate::serve(app).await;
        FakeGmail {
            base_url: served.url(""),
            inner,
            _server: served,
        }
    }

    /// The token endpoint's URL.
    pub fn token_url(&self) -> String {
        format!("{}/token", self.base_url)
    }

    /// Creates a mailbox for `address`.
    pub fn mailbox(&self, name: &str, address: &str) {
        lock(&self.inner).mailboxes.insert(
            name.to_owned(),
            Mailbox {
                address: address.to_owned(),
                ..Mailbox::default()
            },
        );
    }

    /// Grants `scope` on `mailbox`; returns the refresh token.
    pub fn grant(&self, mailbox: &str, scope: &str) -> String {
        let token = format!("refresh-{mailbox}-{}", uuid::Uuid::new_v4().simple());
        lock(&self.inner)
            .grants
            .insert(token.clone(), (mailbox.to_owned(), scope.to_owned()));
        token
    }

    /// Revokes a grant and every access token issued from it.
    pub fn revoke(&self, refresh_token: &str) {
        let mut inner = lock(&self.inner);
        if let Some(grant) = inner.grants.remove(refresh_token) {
            inner.access.retain(|_, issued| *issued != grant);
        }
    }

    /// Stores a message in `mailbox` with `labels` (an incoming one: `["INBOX"]`).
    pub fn deliver(&self, mailbox: &str, from: &str, subject: &str, body: &str, labels: &[&str]) -> String {
        let mut inner = lock(&self.inner);
        let (id, to) = inner.next_for(mailbox);
        let message = StoredMessage {
            id: id.clone(),
            thread_id: id.clone(),
            label_ids: labels.iter().map(|label| (*label).to_owned()).collect(),
            message_id: format!("{id}@example.org"),
            subject: subject.to_owned(),
            from: from.to_owned(),
            to: vec![to],
            body: body.to_owned(),
            internal_date: unix_now(),
            extra_headers: Vec::new(),
            raw: None,
        };
        let mailbox = inner.mailboxes.get_mut(mailbox).expect("mailbox");
        mailbox.add(message);
        id
    }

    /// Stores the RFC 5322 message `raw` in `mailbox` with `labels`, in thread `thread` (a new
    /// thread when `None`); returns its id. Subject, sender and body are read from `raw` for
    /// searches.
    pub fn deliver_raw(&self, mailbox: &str, raw: &[u8], labels: &[&str], thread: Option<&str>) -> String {
        let parsed = mail_parser::MessageParser::default()
            .parse(raw)
            .expect("an RFC 5322 message");
        let mut inner = lock(&self.inner);
        let (id, to) = inner.next_for(mailbox);
        let message = StoredMessage {
            id: id.clone(),
            thread_id: thread.map_or_else(|| id.clone(), str::to_owned),
            label_ids: labels.iter().map(|label| (*label).to_owned()).collect(),
            message_id: parsed
                .message_id()
                .map_or_else(|| format!("{id}@example.org"), str::to_owned),
            subject: parsed.subject().unwrap_or_default().to_owned(),
            from: parsed
                .from()
                .and_then(|from| from.first())
                .and_then(|from| from.address())
                .unwrap_or_default()
                .to_owned(),
            to: vec![to],
            body: parsed.body_text(0).map(|body| body.into_owned()).unwrap_or_default(),
            internal_date: parsed.date().map_or_else(unix_now, |date| date.to_timestamp()),
            extra_headers: Vec::new(),
            raw: Some(raw.to_vec()),
        };
        let mailbox = inner.mailboxes.get_mut(mailbox).expect("mailbox");
        mailbox.add(message);
        id
    }

    /// Adds and removes labels on every message of `thread`, as a client of the provider would
    /// (recorded in the history).
    pub fn relabel(&self, mailbox: &str, thread: &str, add: &[&str], remove: &[&str]) {
        let mut inner = lock(&self.inner);
        let mailbox = inner.mailboxes.get_mut(mailbox).expect("mailbox");
        relabel_thread(mailbox, thread, add, remove);
    }

    /// The provider stops keeping the history so far: a `history.list` from an earlier id is
    /// 404, and a client must resynchronise.
    pub fn expire_history(&self, mailbox: &str) {
        let mut inner = lock(&self.inner);
        let mailbox = inner.mailboxes.get_mut(mailbox).expect("mailbox");
        mailbox.history_floor = mailbox.history_id;
    }

    /// Every message of `mailbox`, in the order delivered.
    pub fn stored(&self, mailbox: &str) -> Vec<StoredMessage> {
        lock(&self.inner)
            .mailboxes
            .get(mailbox)
            .map(|mailbox| mailbox.messages.clone())
            .unwrap_or_default()
    }

    /// The messages of `mailbox` carrying `label`.
    pub fn messages(&self, mailbox: &str, label: &str) -> Vec<StoredMessage> {
        lock(&self.inner)
            .mailboxes
            .get(mailbox)
            .map(|mailbox| {
                mailbox
                    .messages
                    .iter()
                    .filter(|message| message.label_ids.iter().any(|l| l == label))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    pub fn token_requests(&self) -> usize {
        lock(&self.inner).token_requests
    }

    /// Every authorized API call: (mailbox, scope, "METHOD path").
    pub fn calls(&self) -> Vec<(String, String, String)> {
        lock(&self.inner).calls.clone()
    }

    /// The next `threads.modify` meets `fault` (after applying it, unless `DropUnsent`).
    pub fn fail_next_modify(&self, fault: SendFault) {
        lock(&self.inner).modify_fault = Some(fault);
    }

    pub fn fail_next_send(&self, fault: SendFault) {
        lock(&self.inner).send_fault = Some(fault);
    }

    /// From now on a sent message keeps the `Message-ID` it was given.
    pub fn keep_sent_message_ids(&self) {
        lock(&self.inner).keep_sent_message_ids = true;
    }

    pub fn fail_next_draft(&self, fault: SendFault) {
        lock(&self.inner).draft_fault = Some(fault);
    }

    /// Answers the next `count` reads with 429.
    pub fn throttle_reads(&self, count: usize) {
        lock(&self.inner).read_throttles = count;
    }
}

impl Inner {
    fn id(&mut self) -> String {
        self.next_id += 1;
        format!("{:016x}", 0x18c0_0000_0000_0000_u64 + self.next_id)
    }

    /// A new message id, and the address of `mailbox` (blank for an unknown one): what a
    /// delivery into it needs.
    fn next_for(&mut self, mailbox: &str) -> (String, String) {
        let to = self
            .mailboxes
            .get(mailbox)
            .map(|m| m.address.clone())
            .unwrap_or_default();
        (self.id(), to)
    }

    /// The mailbox and scope of the request's bearer token, if the scope may make this call.
    fn authorize(&mut self, headers: &HeaderMap, allowed: &[&str], call: &str) -> Result<String, Refused> {
        let token = headers
            .get("authorization")
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
            .ok_or(Refused(
                StatusCode::UNAUTHORIZED,
                "Request is missing required authentication credential.",
            ))?;
        let (mailbox, scope) = self.access.get(token).cloned().ok_or(Refused(
            StatusCode::UNAUTHORIZED,
            "Request had invalid authentication credentials.",
        ))?;
        if !allowed.contains(&scope.as_str()) {
            return Err(Refused(
                StatusCode::FORBIDDEN,
                "Request had insufficient authentication scopes.",
            ));
        }
        self.calls.push((mailbox.clone(), scope, call.to_owned()));
        Ok(mailbox)
    }
}

//! The client SDK: the protocol half of the spec's client contract (part 9), written once in
//! Rust on the `wire` crate's request and response types, so no shape is copied by hand.
//!
//! - [`Client::new`] takes an HTTPS base URL (plain HTTP only for loopback addresses, the
//!   development exception) without user info, query or fragment; redirects are refused. TLS
//!   trusts the operating system's trust store (rustls-platform-verifier), never bundled roots;
//!   a loopback server is reached directly, never through a configured proxy (which would see
//!   the bearer token of a plain HTTP request).
//! - A 401 is [`ClientError::Reauthenticate`]; a 403 stays [`ClientError::Forbidden`].
//! - [`Client::sessions`] follows the index's cursors to the end and refuses a repeated one.
//! - [`Client::submit`] reuses one idempotency key across retries, and on `active_run_exists`
//!   attaches to the named run without queueing anything.
//! - [`Client::follow`] is a session's event stream across reconnections ([`stream`]).
//! - [`approvals`] checks an approval's cut arguments against their digests before it can be
//!   approved; decisions and answers go to the server once each.
//! - [`artifacts`] uploads with progress and retry, and downloads through an in-memory LRU
//!   cache of at most 32 MiB revalidated with `If-None-Match`.
//! - [`resources`]: folders, schedules, notifications, model settings and runs.

pub mod approvals;
pub mod artifacts;
pub mod bundles;
pub mod resources;
mod stream;

pub use approvals::{CheckedApproval, Refused};
pub use artifacts::{Downloaded, Progress};
pub use stream::{Follow, Replay, Update};

use std::net::IpAddr;
use std::time::Duration;

use reqwest::{Method, StatusCode, Url};
use serde::Serialize;
use serde::de::DeserializeOwned;
use uuid::Uuid;
use wire::problem::Problem;
use wire::request::{CreateSession, SubmitMessage};
use wire::response::{Accepted, Run, Session, SessionPage, SessionSummary};

/// What went wrong, in the terms the contract distinguishes.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    #[error("the base URL is not usable: {0}")]
    BaseUrl(String),
    /// 401: the token is wrong or gone; connect again.
    #[error("the server does not accept this token; connect again ({})", detail(.0))]
    Reauthenticate(Box<Problem>),
    /// 403: the token is valid but does not allow this.
    #[error("not allowed: {}", detail(.0))]
    Forbidden(Box<Problem>),
    /// Any other problem document.
    #[error("{} ({status})", detail(.problem))]
    Problem { status: u16, problem: Box<Problem> },
    /// The server answered something that is not the contract's.
    #[error("unexpected answer ({status}): {message}")]
    Unexpected { status: u16, message: String },
    #[error("the server repeated a page cursor; the list would never end")]
    RepeatedCursor,
    #[error("the server answered with a redirect, which this client never follows")]
    Redirect,
    /// The caller's input cannot be sent as it is.
    #[error("{0}")]
    Invalid(String),
    #[error("cannot reach the server: {0}")]
    Transport(#[source] reqwest::Error),
    /// The operating system's trust store could not be used.
    #[error("cannot set up TLS with the system's trust store: {0}")]
    Tls(String),
}

fn detail(problem: &Problem) -> &str {
    problem.detail.as_deref().unwrap_or(&problem.title)
}

impl ClientError {
    /// The problem's stable `code`, when the server sent one.
    pub fn code(&self) -> Option<&str> {
        match self {
            ClientError::Reauthenticate(problem) | ClientError::Forbidden(problem) => Some(&problem.code),
            ClientError::Problem { problem, .. } => Some(&problem.code),
            _ => None,
        }
    }

    /// Whether the server lacks the route itself (405, or 404 `not_found` rather than a missing
    /// resource): an older release (client contract, Errors "Other rules" 2).
    pub fn missing_route(&self) -> bool {
        match self {
            ClientError::Problem { status: 405, .. } | ClientError::Unexpected { status: 405, .. } => true,
            ClientError::Problem { status: 404, problem } => problem.code == "not_found",
            ClientError::Unexpected { status: 404, .. } => true,
            _ => false,
        }
    }

    /// Worth trying again later: the connection, or a server (or proxy in front of it) that is
    /// failing or asks to slow down.
    fn retryable(&self) -> bool {
        match self {
            ClientError::Transport(_) => true,
            ClientError::Problem { status, .. } | ClientError::Unexpected { status, .. } => {
                *status >= 500 || *status == 429
            }
            _ => false,
        }
    }

    /// Worth submitting again with the same idempotency key: anything retryable, or the first
    /// attempt still being processed.
    fn transient(&self) -> bool {
        self.retryable() || self.code() == Some("idempotency_key_in_flight")
    }
}

pub type Result<T, E = ClientError> = std::result::Result<T, E>;

/// What submitting a message did.
#[derive(Clone, Debug, PartialEq)]
pub enum Submitted {
    /// The message is stored and its run queued.
    Accepted(Box<Run>),
    /// Another run was already active: nothing was queued; this is the run to follow.
    Attached(Uuid),
}

impl Submitted {
    pub fn run_id(&self) -> Uuid {
        match self {
            Submitted::Accepted(run) => run.run_id,
            Submitted::Attached(run) => *run,
        }
    }
}

/// A connection to one Steward server.
#[derive(Clone)]
pub struct Client {
    http: reqwest::Client,
    base: Url,
    token: String,
    retries: u32,
    /// Artifact bytes, shared by every clone of this client.
    cache: std::sync::Arc<std::sync::Mutex<artifacts::Cache>>,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the token.
        f.debug_struct("Client")
            .field("base", &self.base.as_str())
            .finish_non_exhaustive()
    }
}

/// Checks a base URL against the connection rules; the URL to build requests on.
pub fn base_url(text: &str) -> Result<Url> {
    let url = Url::parse(text.trim()).map_err(|error| ClientError::BaseUrl(error.to_string()))?;
    if !url.username().is_empty() || url.password().is_some() {
        return Err(ClientError::BaseUrl("it must not carry a user name or password".into()));
    }
    if url.query().is_some() || url.fragment().is_some() {
        return Err(ClientError::BaseUrl("it must not have a query or a fragment".into()));
    }
    match url.scheme() {
        "https" => {}
        "http" if is_loopback(&url) => {}
        "http" => {
            return Err(ClientError::BaseUrl(
                "plain HTTP is allowed only for a loopback address (127.0.0.1, ::1, localhost); use HTTPS".into(),
            ));
        }
        other => return Err(ClientError::BaseUrl(format!("the scheme must be https, not {other}"))),
    }
    let mut url = url;
    if !url.path().ends_with('/') {
        let path = format!("{}/", url.path());
        url.set_path(&path);
    }
    Ok(url)
}

/// TLS that verifies servers the way the operating system does, with its trust store.
fn os_trust() -> Result<rustls::ClientConfig> {
    let provider = std::sync::Arc::new(rustls::crypto::ring::default_provider());
    let verifier = rustls_platform_verifier::Verifier::new(provider.clone())
        .map_err(|error| ClientError::Tls(error.to_string()))?;
    Ok(rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|error| ClientError::Tls(error.to_string()))?
        .dangerous()
        .with_custom_certificate_verifier(std::sync::Arc::new(verifier))
        .with_no_client_auth())
}

fn is_loopback(url: &Url) -> bool {
    let Some(host) = url.host_str() else {
        return false;
    };
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host.eq_ignore_ascii_case("localhost") || host.parse::<IpAddr>().is_ok_and(|address| address.is_loopback())
}

/// The error a refused request's body means: 401 and 403 apart, any other problem document as
/// itself, anything else unexpected.
fn refusal(status: StatusCode, bytes: &[u8]) -> ClientError {
    let Ok(problem) = serde_json::from_slice::<Problem>(bytes) else {
        return ClientError::Unexpected {
            status: status.as_u16(),
            message: String::from_utf8_lossy(bytes).chars().take(200).collect(),
        };
    };
    match status {
        StatusCode::UNAUTHORIZED => ClientError::Reauthenticate(Box::new(problem)),
        StatusCode::FORBIDDEN => ClientError::Forbidden(Box::new(problem)),
        _ => ClientError::Problem {
            status: status.as_u16(),
            problem: Box::new(problem),
        },
    }
}

impl Client {
    /// A client of the server at `base` (see [`base_url`]) presenting `token`.
    pub fn new(base: &str, token: impl Into<String>) -> Result<Client> {
        let base = base_url(base)?;
        let mut http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .connect_timeout(Duration::from_secs(10))
            .use_preconfigured_tls(os_trust()?);
        if is_loopback(&base) {
            // `http_proxy` and its kin are for leaving the machine; a loopback server is here.
            http = http.no_proxy();
        }
        let http = http.build().map_err(ClientError::Transport)?;
        Ok(Client {
            http,
            base,
            token: token.into(),
            retries: 3,
            cache: Default::default(),
        })
    }

    pub fn base(&self) -> &Url {
        &self.base
    }

    fn url(&self, path: &str) -> Url {
        self.base
            .join(path.trim_start_matches('/'))
            .expect("a relative path joins any base")
    }

    fn request(&self, method: Method, path: &str) -> reqwest::RequestBuilder {
        self.http
            .request(method, self.url(path))
            .bearer_auth(&self.token)
            .header(reqwest::header::ACCEPT, "application/json")
    }

    /// Sends `request`; its response when it succeeded, every refusal mapped to its error (a
    /// redirect is never followed).
    pub(crate) async fn checked(&self, request: reqwest::RequestBuilder) -> Result<reqwest::Response> {
        let response = request.send().await.map_err(ClientError::Transport)?;
        let status = response.status();
        if status.is_redirection() {
            return Err(ClientError::Redirect);
        }
        if status.is_success() {
            return Ok(response);
        }
        let bytes = response.bytes().await.map_err(ClientError::Transport)?;
        Err(refusal(status, &bytes))
    }

    /// Sends `request` and reads its JSON answer, mapping every refusal to its error.
    async fn send<T: DeserializeOwned>(&self, request: reqwest::RequestBuilder) -> Result<T> {
        let response = self.checked(request).await?;
        let status = response.status();
        let bytes = response.bytes().await.map_err(ClientError::Transport)?;
        serde_json::from_slice(&bytes).map_err(|error| ClientError::Unexpected {
            status: status.as_u16(),
            message: error.to_string(),
        })
    }

    async fn json<B: Serialize, T: DeserializeOwned>(&self, method: Method, path: &str, body: &B) -> Result<T> {
        self.send(self.request(method, path).json(body)).await
    }

    async fn get<T: DeserializeOwned>(&self, path: &str) -> Result<T> {
        self.send(self.request(Method::GET, path)).await
    }

    /// Sends `request`, whose success has no body to read (204 and the like).
    async fn send_empty(&self, request: reqwest::RequestBuilder) -> Result<()> {
        self.checked(request).await.map(drop)
    }

    /// The whole session index, following its cursors to the end; a cursor the server already
    /// gave is refused rather than followed forever.
    pub async fn sessions(&self) -> Result<Vec<SessionSummary>> {
        let mut sessions = Vec::new();
        let mut seen = std::collections::HashSet::new();
        let mut cursor: Option<String> = None;
        loop {
            let mut request = self.request(Method::GET, "v1/sessions").query(&[("limit", "100")]);
            if let Some(cursor) = &cursor {
                request = request.query(&[("cursor", cursor)]);
            }
            let page: SessionPage = self.send(request).await?;
            sessions.extend(page.sessions);
            match page.next_cursor {
                None => return Ok(sessions),
                Some(next) => {
                    if !seen.insert(next.clone()) {
                        return Err(ClientError::RepeatedCursor);
                    }
                    cursor = Some(next);
                }
            }
        }
    }

    /// Creates a conversation with `agent_id`, titled `title` until the server names it.
    pub async fn create_session(&self, agent_id: &str, title: Option<&str>) -> Result<Session> {
        let metadata = title.map(|title| {
            let mut map = serde_json::Map::new();
            map.insert("title".into(), serde_json::Value::String(title.to_owned()));
            map
        });
        let body = CreateSession {
            agent_id: agent_id.to_owned(),
            metadata,
            browser_profile_id: None,
        };
        self.json(Method::POST, "v1/sessions", &body).await
    }

    /// Submits one message. One idempotency key serves every attempt, so a retry after a lost
    /// answer finds the run the first attempt made; `active_run_exists` attaches to the run in
    /// progress and queues nothing.
    pub async fn submit(&self, session: Uuid, message: &SubmitMessage) -> Result<Submitted> {
        let key = Uuid::new_v4().to_string();
        let path = format!("v1/sessions/{session}/messages");
        let mut attempt = 0;
        loop {
            let request = self
                .request(Method::POST, &path)
                .header("Idempotency-Key", &key)
                .json(message);
            match self.send::<Accepted>(request).await {
                Ok(accepted) => return Ok(Submitted::Accepted(Box::new(accepted.run))),
                Err(ClientError::Problem { problem, .. }) if problem.code == "active_run_exists" => {
                    return match problem.run_id {
                        Some(run) => Ok(Submitted::Attached(run)),
                        None => Err(ClientError::Unexpected {
                            status: 409,
                            message: "active_run_exists without a run_id".into(),
                        }),
                    };
                }
                Err(error) if error.transient() && attempt < self.retries => {
                    attempt += 1;
                    tokio::time::sleep(Duration::from_millis(200 * u64::from(attempt))).await;
                }
                Err(error) => return Err(error),
            }
        }
    }

    /// One session of the index.
    pub async fn session(&self, session: Uuid) -> Result<Session> {
        self.get(&format!("v1/sessions/{session}")).await
    }

    /// Deletes a conversation; a repeat by the same owner succeeds; one with an active run is
    /// refused (`session_has_active_run`).
    pub async fn delete_session(&self, session: Uuid) -> Result<()> {
        self.send_empty(self.request(Method::DELETE, &format!("v1/sessions/{session}")))
            .await
    }

    /// What the server makes of this client's token: its kind and the scopes it holds. A wrong
    /// token is [`ClientError::Reauthenticate`].
    pub async fn credential(&self) -> Result<wire::response::WebSession> {
        self.get("v1/web/session").await
    }

    /// The latest conversation (most recently active, scheduled sessions left out).
    pub async fn latest_conversation(&self) -> Result<Option<SessionSummary>> {
        Ok(self
            .sessions()
            .await?
            .into_iter()
            .filter(|session| session.schedule_id.is_none())
            .max_by_key(|session| session.updated_at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn base_urls_follow_the_connection_rules() {
        for good in [
            "https://steward.example",
            "https://steward.example/",
            "https://steward.example:8443/prefix",
            "http://127.0.0.1:8080",
            "http://localhost:8080/",
            "http://[::1]:8080",
        ] {
            let url = base_url(good).unwrap_or_else(|error| panic!("{good}: {error}"));
            assert!(url.path().ends_with('/'), "{url}");
        }
        for (bad, why) in [
            ("http://steward.example", "loopback"),
            ("http://10.0.0.2:8080", "loopback"),
            ("https://owner:secret@steward.example", "user name"),
            ("https://steward.example/?token=x", "query"),
            ("https://steward.example/#x", "fragment"),
            ("ftp://steward.example", "scheme"),
            ("steward.example", "relative URL"),
        ] {
            let error = base_url(bad).expect_err(bad).to_string();
            assert!(error.contains(why), "{bad}: {error}");
        }
        let client = Client::new("https://steward.example/prefix", "secret-token").expect("client");
        assert_eq!(
            client.url("v1/sessions").as_str(),
            "https://steward.example/prefix/v1/sessions"
        );
        assert!(
            !format!("{client:?}").contains("secret-token"),
            "the token never shows in Debug"
        );
    }
}

//! The Gmail REST client: access tokens from each credential document's refresh token (cached
//! until shortly before they expire), reads with backoff, and writes and sends that are
//! dispatched at most once.
//!
//! Every request is paced per account against the provider's per-user quota (a token bucket
//! of [`Endpoints::quota_units_per_second`], holding at most a second's worth, charged each
//! method's documented units), so a burst such as a reconciliation's header search slows down
//! instead of being throttled. Reads (`threads.list`, `threads.get`, `labels.list`,
//! `getProfile`, `history.list`, `messages.list`, `messages.get`) are
//! retried on 429, 5xx, usage-limit 403s and transport errors, honouring `Retry-After`. A write or send is never retried once its
//! request may have reached the provider: a refused connection proves nothing was sent (the
//! call fails), and a 4xx proves it was refused, but a timeout, a reset or a 5xx after dispatch
//! leaves the outcome unknown (`mail.outcome_unknown`). The only repeat is after a 401, which
//! proves the request was not acted on: the token is refreshed once and the call made again.

use std::collections::HashMap;
use std::sync::Mutex;
use std::time::{Duration, Instant};

use reqwest::StatusCode;
use serde_json::Value;

use crate::document::{CredentialDocument, MailScope};

/// Google's endpoints.
pub const DEFAULT_API_BASE_URL: &str = "https://gmail.googleapis.com";
pub const DEFAULT_TOKEN_URL: &str = "https://oauth2.googleapis.com/token";

/// Access tokens are refreshed this long before the provider says they expire.
const TOKEN_EARLY: Duration = Duration::from_secs(60);
/// Longest `Retry-After` honoured; a longer one ends the read as rate limited.
const RETRY_AFTER_MAX: Duration = Duration::from_secs(20);

/// Where the provider is, and how reads back off.
#[derive(Clone, Debug)]
pub struct Endpoints {
    /// `https://gmail.googleapis.com`; the API paths (`/gmail/v1/users/me/…`) are appended.
    pub api_base_url: String,
    /// The OAuth token endpoint of the refresh-token grant.
    pub token_url: String,
    /// Attempts of a read (the first included).
    pub read_attempts: u32,
    /// First backoff of a read; it doubles per attempt.
    pub read_backoff: Duration,
    /// Longest wait for any one provider request. A write or send that runs out of it has an
    /// unknown outcome.
    pub request_timeout: Duration,
    /// The per-user quota each account is paced to (Gmail: 15,000 units a minute). The pacing
    /// is per worker process.
    pub quota_units_per_second: f64,
}

impl Default for Endpoints {
    fn default() -> Self {
        Endpoints {
            api_base_url: DEFAULT_API_BASE_URL.to_owned(),
            token_url: DEFAULT_TOKEN_URL.to_owned(),
            read_attempts: 4,
            read_backoff: Duration::from_millis(500),
            request_timeout: Duration::from_secs(30),
            quota_units_per_second: 250.0,
        }
    }
}

impl Endpoints {
    /// Google's endpoints, unless `MAIL_API_BASE_URL` or `MAIL_OAUTH_TOKEN_URL` (read through
    /// `get`; unset and empty are the same) name others: https, or plain http to a loopback
    /// address only. The error names the variable and why.
    pub fn from_env(get: impl Fn(&str) -> Option<String>) -> Result<Endpoints, (&'static str, &'static str)> {
        let mut endpoints = Endpoints::default();
        for (variable, target) in [
            ("MAIL_API_BASE_URL", &mut endpoints.api_base_url),
            ("MAIL_OAUTH_TOKEN_URL", &mut endpoints.token_url),
        ] {
            if let Some(url) = get(variable).filter(|url| !url.is_empty()) {
                crate::endpoint::checked(&url).map_err(|reason| (variable, reason))?;
                *target = url;
            }
        }
        Ok(endpoints)
    }
}

/// Why a provider call did not succeed. [`MailError::code`] is what the model and the owner see.
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub enum MailError {
    /// The token endpoint refused the refresh token (revoked, expired testing-status grant, or a
    /// grant without the document's scope).
    #[error("the mail provider rejected the account's credential; disable mail, then re-bootstrap")]
    CredentialRejected,
    /// Certainly not acted on: the provider could not be reached, or the token could not be had.
    #[error("the mail provider is unavailable ({0}); nothing was changed")]
    Unavailable(String),
    /// The provider's quota or rate limit held after the backoff (reads) or at once (writes).
    #[error("the mail provider's rate limit was reached; try again later")]
    RateLimited,
    /// The provider refused the request; nothing was changed.
    #[error("the mail provider refused the request with HTTP {status}: {reason}")]
    Rejected { status: u16, reason: String },
    /// A write or send whose result is unknown. It is never repeated.
    #[error("the outcome is unknown ({0}); it will not be repeated")]
    OutcomeUnknown(String),
}

impl MailError {
    /// Whether waiting can change the answer: the provider could not be reached or was busy.
    /// A rejected credential or a refused request stays so until someone acts.
    pub fn is_transient(&self) -> bool {
        matches!(self, MailError::Unavailable(_) | MailError::RateLimited)
    }

    pub fn code(&self) -> &'static str {
        match self {
            MailError::CredentialRejected => "mail.credential_rejected",
            MailError::Unavailable(_) => "mail.unavailable",
            MailError::RateLimited => "mail.rate_limited",
            MailError::Rejected { .. } => "mail.rejected",
            MailError::OutcomeUnknown(_) => "mail.outcome_unknown",
        }
    }
}

struct CachedToken {
    value: String,
    fresh_until: Instant,
}

/// The quota units a call costs, as the provider documents them (`labels.list` 1; `threads.list`,
/// `threads.get`, `drafts.create` 10; `messages.send` 100).
fn quota_units(path: &str) -> f64 {
    match path {
        "labels" | "profile" => 1.0,
        "history" => 2.0,
        "messages/send" => 100.0,
        // `messages.list` and `messages.get`.
        "messages" => 5.0,
        path if path.starts_with("messages/") => 5.0,
        _ => 10.0,
    }
}

/// One account's share of the per-user quota: a token bucket refilled at `rate` units a second,
/// holding at most a second's worth. Units taken beyond what it holds are a reservation: the
/// caller waits for them, and later callers queue behind it.
#[derive(Clone, Copy, Debug)]
struct QuotaBucket {
    units: f64,
    at: Instant,
}

impl QuotaBucket {
    fn full(rate: f64, now: Instant) -> QuotaBucket {
        QuotaBucket { units: rate, at: now }
    }

    /// Takes `cost` units at `now`; how long the caller waits before its request.
    fn take(&mut self, cost: f64, rate: f64, now: Instant) -> Duration {
        // Callers read `now` before taking the lock: one a little behind must not refill again.
        let now = now.max(self.at);
        let elapsed = now.saturating_duration_since(self.at).as_secs_f64();
        self.units = (self.units + elapsed * rate).min(rate) - cost;
        self.at = now;
        if self.units >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.units / rate)
        }
    }
}

/// The provider client. One per worker; tokens are cached per account and scope.
pub struct GmailClient {
    http: reqwest::Client,
    endpoints: Endpoints,
    tokens: Mutex<HashMap<(String, &'static str), CachedToken>>,
    quota: Mutex<HashMap<String, QuotaBucket>>,
}

impl std::fmt::Debug for GmailClient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GmailClient")
            .field("endpoints", &self.endpoints)
            .finish_non_exhaustive()
    }
}

/// One credential of one account: which document a call uses.
#[derive(Clone, Copy, Debug)]
pub struct Credential<'a> {
    pub account_id: &'a str,
    pub document: &'a CredentialDocument,
}

impl Credential<'_> {
    fn key(&self) -> (String, &'static str) {
        (self.account_id.to_owned(), self.document.scope.url())
    }
}

enum Attempt {
    Done(Value),
    /// Worth another read attempt after the delay (if any is left).
    Retry(MailError, Option<Duration>),
    Fail(MailError),
}

fn reason(body: &Value) -> String {
    body["error"]["message"]
        .as_str()
        .or_else(|| body["error"].as_str())
        .unwrap_or("no reason given")
        .chars()
        .take(200)
        .collect()
}

/// Gmail reports usage limits as 403 with these reasons.
fn is_usage_limit(body: &Value) -> bool {
    body["error"]["errors"].as_array().is_some_and(|errors| {
        errors.iter().any(|error| {
            matches!(
                error["reason"].as_str(),
                Some("rateLimitExceeded" | "userRateLimitExceeded" | "quotaExceeded" | "dailyLimitExceeded")
            )
        })
    })
}

fn retry_after(response: &reqwest::Response) -> Option<Duration> {
    response
        .headers()
        .get(reqwest::header::RETRY_AFTER)?
        .to_str()
        .ok()?
        .trim()
        .parse::<u64>()
        .ok()
        .map(Duration::from_secs)
}

impl GmailClient {
    /// A client of its own that follows no redirect: a 307 or 308 would make it send a write
    /// or send a second time, and a bearer token must not travel to another address.
    pub fn new(endpoints: Endpoints) -> Result<GmailClient, reqwest::Error> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .build()?;
        Ok(GmailClient {
            http,
            endpoints,
            tokens: Mutex::new(HashMap::new()),
            quota: Mutex::new(HashMap::new()),
        })
    }

    fn url(&self, path: &str) -> String {
        format!(
            "{}/gmail/v1/users/me/{path}",
            self.endpoints.api_base_url.trim_end_matches('/')
        )
    }

    /// The access-token cache. A task that panicked while holding it cannot have left it half
    /// written (each change is one insert or remove), so it is used on, and the panic logged.
    fn cached_tokens(&self) -> std::sync::MutexGuard<'_, HashMap<(String, &'static str), CachedToken>> {
        self.tokens.lock().unwrap_or_else(|poisoned| {
            tracing::error!("the mail token cache was held by a task that panicked; it is used on");
            poisoned.into_inner()
        })
    }

    /// Waits until `account` has the quota units `path` costs.
    async fn pace(&self, account: &str, path: &str) {
        let rate = self.endpoints.quota_units_per_second;
        if rate <= 0.0 {
            return;
        }
        let now = Instant::now();
        // A panic while the buckets were held cannot leave them inconsistent (each update is one
        // assignment), so pacing goes on with them; the panic is logged, not hidden.
        let wait = self
            .quota
            .lock()
            .unwrap_or_else(|poisoned| {
                tracing::error!("the mail quota buckets were held by a task that panicked; pacing continues");
                poisoned.into_inner()
            })
            .entry(account.to_owned())
            .or_insert_with(|| QuotaBucket::full(rate, now))
            .take(quota_units(path), rate, now);
        if !wait.is_zero() {
            tracing::debug!(?wait, "mail request paced to the provider's quota");
            tokio::time::sleep(wait).await;
        }
    }

    fn forget_token(&self, credential: Credential<'_>) {
        self.cached_tokens().remove(&credential.key());
    }

    /// An access token for `credential`, from the cache or the refresh-token grant.
    async fn access_token(&self, credential: Credential<'_>) -> Result<String, MailError> {
        if let Some(token) = self.cached_tokens().get(&credential.key())
            && token.fresh_until > Instant::now()
        {
            return Ok(token.value.clone());
        }
        let document = credential.document;
        let response = self
            .http
            .post(&self.endpoints.token_url)
            .form(&[
                ("grant_type", "refresh_token"),
                ("client_id", document.client_id.as_str()),
                ("client_secret", document.client_secret()),
                ("refresh_token", document.refresh_token()),
            ])
            .timeout(self.endpoints.request_timeout)
            .send()
            .await
            .map_err(|error| MailError::Unavailable(transport(&error)))?;
        let status = response.status();
        let body: Value = response.json().await.unwrap_or(Value::Null);
        // RFC 6749 §5.2: these say the document itself is no good (a revoked or expired grant,
        // a deleted client, a grant that lost its scope); anything else is the endpoint's trouble.
        if matches!(
            body["error"].as_str(),
            Some("invalid_grant" | "invalid_client" | "unauthorized_client" | "invalid_scope")
        ) {
            return Err(MailError::CredentialRejected);
        }
        if status == StatusCode::TOO_MANY_REQUESTS {
            return Err(MailError::RateLimited);
        }
        if !status.is_success() {
            return Err(MailError::Unavailable(format!(
                "token endpoint answered HTTP {}",
                status.as_u16()
            )));
        }
        let Some(token) = body["access_token"].as_str().filter(|token| !token.is_empty()) else {
            return Err(MailError::Unavailable("token endpoint gave no access token".into()));
        };
        // A grant that no longer carries the document's scope is as good as rejected.
        if let Some(granted) = body["scope"].as_str()
            && !granted.split_whitespace().any(|scope| scope == document.scope.url())
        {
            return Err(MailError::CredentialRejected);
        }
        let lifetime = Duration::from_secs(body["expires_in"].as_u64().unwrap_or(3600));
        let fresh_until = Instant::now() + lifetime.saturating_sub(TOKEN_EARLY);
        self.cached_tokens().insert(
            credential.key(),
            CachedToken {
                value: token.to_owned(),
                fresh_until,
            },
        );
        Ok(token.to_owned())
    }

    /// A read: `GET` with backoff. `credential` must be a read document.
    pub async fn read(
        &self,
        credential: Credential<'_>,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<Value, MailError> {
        debug_assert_eq!(credential.document.scope, MailScope::Read);
        let mut reauthorized = false;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let token = self.access_token(credential).await?;
            self.pace(credential.account_id, path).await;
            let sent = self
                .http
                .get(self.url(path))
                .query(query)
                .bearer_auth(&token)
                .timeout(self.endpoints.request_timeout)
                .send()
                .await;
            let outcome = match sent {
                Err(error) => Attempt::Retry(MailError::Unavailable(transport(&error)), None),
                Ok(response) => {
                    let status = response.status();
                    let wait = retry_after(&response);
                    let body: Value = response.json().await.unwrap_or(Value::Null);
                    match status {
                        status if status.is_success() => Attempt::Done(body),
                        StatusCode::UNAUTHORIZED if !reauthorized => {
                            reauthorized = true;
                            self.forget_token(credential);
                            attempt -= 1;
                            continue;
                        }
                        StatusCode::TOO_MANY_REQUESTS => Attempt::Retry(MailError::RateLimited, wait),
                        StatusCode::FORBIDDEN if is_usage_limit(&body) => Attempt::Retry(MailError::RateLimited, wait),
                        status if status.is_server_error() => {
                            Attempt::Retry(MailError::Unavailable(format!("HTTP {}", status.as_u16())), wait)
                        }
                        status => Attempt::Fail(MailError::Rejected {
                            status: status.as_u16(),
                            reason: reason(&body),
                        }),
                    }
                }
            };
            match outcome {
                Attempt::Done(value) => return Ok(value),
                Attempt::Fail(error) => return Err(error),
                Attempt::Retry(error, wait) => {
                    if attempt >= self.endpoints.read_attempts {
                        return Err(error);
                    }
                    let backoff = self.endpoints.read_backoff * 2u32.saturating_pow(attempt - 1);
                    let delay = match wait {
                        Some(wait) if wait > RETRY_AFTER_MAX => return Err(error),
                        Some(wait) => wait.max(backoff),
                        None => backoff,
                    };
                    tracing::debug!(code = error.code(), attempt, ?delay, "mail read backing off");
                    tokio::time::sleep(delay).await;
                }
            }
        }
    }

    /// A write or send: one `POST`, never repeated once it may have been acted on.
    pub async fn dispatch(&self, credential: Credential<'_>, path: &str, body: &Value) -> Result<Value, MailError> {
        let mut reauthorized = false;
        loop {
            // Failing to get a token happens before anything is sent.
            let token = self.access_token(credential).await?;
            self.pace(credential.account_id, path).await;
            let sent = self
                .http
                .post(self.url(path))
                .json(body)
                .bearer_auth(&token)
                .timeout(self.endpoints.request_timeout)
                .send()
                .await;
            let response = match sent {
                Ok(response) => response,
                // A refused connection proves the request never left.
                Err(error) if error.is_connect() => {
                    return Err(MailError::Unavailable(transport(&error)));
                }
                Err(error) => return Err(MailError::OutcomeUnknown(transport(&error))),
            };
            let status = response.status();
            let answer: Result<Value, _> = response.json().await;
            return match status {
                status if status.is_success() => match answer {
                    Ok(value) => Ok(value),
                    // Accepted, but the answer was lost on the way: what was created is unknown.
                    Err(error) => Err(MailError::OutcomeUnknown(format!(
                        "the provider accepted the request but its answer was unreadable: {}",
                        transport(&error)
                    ))),
                },
                StatusCode::UNAUTHORIZED if !reauthorized => {
                    reauthorized = true;
                    self.forget_token(credential);
                    continue;
                }
                StatusCode::TOO_MANY_REQUESTS => Err(MailError::RateLimited),
                status if status.is_server_error() => Err(MailError::OutcomeUnknown(format!(
                    "the provider answered HTTP {} after the request was sent",
                    status.as_u16()
                ))),
                status => {
                    let body = answer.unwrap_or(Value::Null);
                    if status == StatusCode::FORBIDDEN && is_usage_limit(&body) {
                        Err(MailError::RateLimited)
                    } else {
                        Err(MailError::Rejected {
                            status: status.as_u16(),
                            reason: reason(&body),
                        })
                    }
                }
            };
        }
    }
}

/// Describes a transport error without its URL (which can hold a query with mail content).
fn transport(error: &reqwest::Error) -> String {
    if error.is_timeout() {
        "the request timed out".into()
    } else if error.is_connect() {
        "the connection was refused".into()
    } else if error.is_decode() || error.is_body() {
        "the answer was cut off".into()
    } else {
        "the connection failed".into()
    }
}

#[cfg(test)]
mod tests {
    //! The client against a real local HTTP server: what each provider answer comes to, and
    //! how many requests reached the provider (a write or send: never more than one).

    use std::collections::VecDeque;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use axum::extract::State;
    use axum::http::{HeaderMap, StatusCode as Status};
    use axum::response::{IntoResponse, Response};
    use axum::routing::{any, post};
    use serde_json::json;
    use tokio::io::AsyncReadExt;

    use super::*;

    /// What the provider does with the next API request (then `Ok`).
    #[derive(Clone, Copy, Debug)]
    enum Answer {
        Status(u16),
        UsageLimit,
        RetryAfter(u64),
        Slow(Duration),
        Garbled,
    }

    #[derive(Default)]
    struct Provider {
        answers: Mutex<VecDeque<Answer>>,
        api_requests: AtomicUsize,
        token_requests: AtomicUsize,
        /// The one access token the API accepts now.
        valid: Mutex<Option<String>>,
        /// What the token endpoint does: `None` refuses the grant, else the scope it reports.
        grant: Mutex<Option<String>>,
    }

    async fn token(State(provider): State<Arc<Provider>>) -> Response {
        let issued = provider.token_requests.fetch_add(1, Ordering::SeqCst) + 1;
        let Some(scope) = provider.grant.lock().expect("lock").clone() else {
            let body = json!({ "error": "invalid_grant", "error_description": "Token has been expired or revoked." });
            return (Status::BAD_REQUEST, axum::Json(body)).into_response();
        };
        let value = format!("access-{issued}");
        *provider.valid.lock().expect("lock") = Some(value.clone());
        axum::Json(json!({ "access_token": value, "expires_in": 3599, "scope": scope, "token_type": "Bearer" }))
            .into_response()
    }

    async fn api(State(provider): State<Arc<Provider>>, headers: HeaderMap) -> Response {
        provider.api_requests.fetch_add(1, Ordering::SeqCst);
        let valid = provider.valid.lock().expect("lock").clone();
        let presented = headers
            .get("authorization")
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "));
        if valid.is_none() || presented != valid.as_deref() {
            return (Status::UNAUTHORIZED, axum::Json(json!({ "error": { "code": 401 } }))).into_response();
        }
        let answer = provider.answers.lock().expect("lock").pop_front();
        let fail =
            |status: u16, body: Value| (Status::from_u16(status).expect("status"), axum::Json(body)).into_response();
        match answer {
            None => axum::Json(json!({ "id": "m1", "threadId": "t1" })).into_response(),
            Some(Answer::Status(status)) => fail(status, json!({ "error": { "code": status, "message": "scripted" } })),
            Some(Answer::UsageLimit) => fail(
                403,
                json!({ "error": { "code": 403, "message": "quota", "errors": [{ "reason": "userRateLimitExceeded" }] } }),
            ),
            Some(Answer::RetryAfter(seconds)) => {
                (Status::TOO_MANY_REQUESTS, [("retry-after", seconds.to_string())], "{}").into_response()
            }
            Some(Answer::Slow(delay)) => {
                tokio::time::sleep(delay).await;
                axum::Json(json!({ "id": "late" })).into_response()
            }
            Some(Answer::Garbled) => {
                (Status::OK, [("content-type", "application/json")], "{\"id\": \"m1\"").into_response()
            }
        }
    }

    struct Setup {
        provider: Arc<Provider>,
        endpoints: Endpoints,
        _server: tokio::task::JoinHandle<()>,
    }

    async fn serve(router: axum::Router) -> (String, tokio::task::JoinHandle<()>) {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let url = format!("http://{}", listener.local_addr().expect("address"));
        let server = tokio::spawn(async move {
            axum::serve(listener, router).await.expect("serve");
        });
        (url, server)
    }

    async fn setup(scope: MailScope, answers: &[Answer]) -> Setup {
        let provider = Arc::new(Provider::default());
        *provider.grant.lock().expect("lock") = Some(scope.url().to_owned());
        provider.answers.lock().expect("lock").extend(answers.iter().copied());
        let router = axum::Router::new()
            .route("/token", post(token))
            .route("/gmail/v1/users/me/{*path}", any(api))
            .with_state(provider.clone());
        let (url, server) = serve(router).await;
        Setup {
            provider,
            endpoints: Endpoints {
                api_base_url: url.clone(),
                token_url: format!("{url}/token"),
                read_attempts: 3,
                read_backoff: Duration::from_millis(1),
                request_timeout: Duration::from_secs(5),
                quota_units_per_second: 250.0,
            },
            _server: server,
        }
    }

    fn document(scope: MailScope) -> CredentialDocument {
        let body = json!({ "client_id": "client", "client_secret": "secret", "refresh_token": "refresh", "scope": scope.url() });
        CredentialDocument::parse(body.to_string().as_bytes(), scope, None).expect("document")
    }

    fn client(endpoints: &Endpoints) -> GmailClient {
        GmailClient::new(endpoints.clone()).expect("client")
    }

    fn requests(setup: &Setup) -> (usize, usize) {
        (
            setup.provider.api_requests.load(Ordering::SeqCst),
            setup.provider.token_requests.load(Ordering::SeqCst),
        )
    }

    async fn send_once(answers: &[Answer]) -> (Result<Value, MailError>, usize) {
        let setup = setup(MailScope::Send, answers).await;
        let send = document(MailScope::Send);
        let credential = Credential {
            account_id: "personal",
            document: &send,
        };
        let mut endpoints = setup.endpoints.clone();
        endpoints.request_timeout = Duration::from_millis(300);
        let result = client(&endpoints)
            .dispatch(credential, "messages/send", &json!({ "raw": "eA" }))
            .await;
        (result, requests(&setup).0)
    }

    #[tokio::test]
    async fn a_send_is_made_once_whatever_the_provider_answers() {
        let (sent, requests) = send_once(&[]).await;
        assert_eq!((sent.expect("sent")["id"].as_str(), requests), (Some("m1"), 1));

        for (answers, code) in [
            // After dispatch, nobody knows: a 5xx, a timeout, an answer cut off.
            (vec![Answer::Status(503)], "mail.outcome_unknown"),
            (vec![Answer::Status(500)], "mail.outcome_unknown"),
            (vec![Answer::Slow(Duration::from_secs(3))], "mail.outcome_unknown"),
            (vec![Answer::Garbled], "mail.outcome_unknown"),
            // Refusals prove nothing happened; they are not retried either.
            (vec![Answer::Status(400)], "mail.rejected"),
            (vec![Answer::Status(429)], "mail.rate_limited"),
            (vec![Answer::UsageLimit], "mail.rate_limited"),
        ] {
            let (result, requests) = send_once(&answers).await;
            let error = result.expect_err("not sent");
            assert_eq!((error.code(), requests), (code, 1), "{answers:?}: {error}");
        }
    }

    #[tokio::test]
    async fn a_connection_lost_after_the_request_was_written_is_an_unknown_outcome() {
        let setup = setup(MailScope::Send, &[]).await;
        // An API that reads the whole request, then drops the connection without answering.
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        let received = Arc::new(AtomicUsize::new(0));
        let seen = received.clone();
        let dropper = tokio::spawn(async move {
            while let Ok((mut stream, _)) = listener.accept().await {
                let mut request = Vec::new();
                let mut buffer = [0u8; 4096];
                while let Ok(read @ 1..) = stream.read(&mut buffer).await {
                    request.extend_from_slice(&buffer[..read]);
                    if request.windows(4).any(|window| window == b"\r\n\r\n") && request.ends_with(b"}") {
                        break;
                    }
                }
                seen.fetch_add(1, Ordering::SeqCst);
                drop(stream);
            }
        });
        let mut endpoints = setup.endpoints.clone();
        endpoints.api_base_url = format!("http://{address}");
        let send = document(MailScope::Send);
        let credential = Credential {
            account_id: "personal",
            document: &send,
        };
        let error = client(&endpoints)
            .dispatch(credential, "messages/send", &json!({ "raw": "eA" }))
            .await
            .expect_err("unknown");
        assert_eq!(error.code(), "mail.outcome_unknown", "{error}");
        assert_eq!(received.load(Ordering::SeqCst), 1, "written once, never again");
        dropper.abort();

        // A refused connection proves the request never left: nothing happened.
        let closed = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
        endpoints.api_base_url = format!("http://{}", closed.local_addr().expect("address"));
        drop(closed);
        let error = client(&endpoints)
            .dispatch(credential, "messages/send", &json!({ "raw": "eA" }))
            .await
            .expect_err("unavailable");
        assert_eq!(error.code(), "mail.unavailable", "{error}");
    }

    #[tokio::test]
    async fn an_expired_access_token_is_refreshed_once_and_the_send_made_once() {
        let setup = setup(MailScope::Send, &[]).await;
        let send = document(MailScope::Send);
        let credential = Credential {
            account_id: "personal",
            document: &send,
        };
        let client = client(&setup.endpoints);
        client.dispatch(credential, "drafts", &json!({})).await.expect("first");
        // The provider forgets the cached token: a 401 proves the request was not acted on.
        *setup.provider.valid.lock().expect("lock") = None;
        let answer = client.dispatch(credential, "messages/send", &json!({})).await;
        assert_eq!(answer.expect("sent")["id"], "m1");
        assert_eq!(
            requests(&setup),
            (3, 2),
            "one refused request, one accepted; two tokens"
        );
    }

    #[test]
    fn requests_are_paced_to_the_per_user_quota() {
        let rate = 250.0;
        let start = Instant::now();
        let mut bucket = QuotaBucket::full(rate, start);
        // A second's worth goes at once: 25 thread reads of 10 units.
        for _ in 0..25 {
            assert_eq!(bucket.take(quota_units("threads/t1"), rate, start), Duration::ZERO);
        }
        // Then each waits for its units: 40 ms apart.
        let waits: Vec<u128> = (0..3)
            .map(|_| bucket.take(quota_units("threads"), rate, start).as_millis())
            .collect();
        assert_eq!(waits, [40, 80, 120]);
        // Idle time refills it, to a second's worth at most.
        let later = start + Duration::from_secs(10);
        assert_eq!(bucket.take(quota_units("messages/send"), rate, later), Duration::ZERO);
        assert_eq!(bucket.take(150.0, rate, later), Duration::ZERO);
        assert_eq!(bucket.take(quota_units("labels"), rate, later).as_millis(), 4);
        assert_eq!(
            [
                quota_units("labels"),
                quota_units("drafts"),
                quota_units("messages/send")
            ],
            [1.0, 10.0, 100.0]
        );
    }

    #[tokio::test]
    async fn reads_back_off_and_tokens_are_cached_and_checked() {
        let read = document(MailScope::Read);
        let credential = Credential {
            account_id: "personal",
            document: &read,
        };
        // Two throttled answers are waited out; the token is fetched once for all reads.
        let throttled = setup(MailScope::Read, &[Answer::Status(503), Answer::Status(429)]).await;
        let reader = client(&throttled.endpoints);
        reader.read(credential, "labels", &[]).await.expect("third attempt");
        reader.read(credential, "labels", &[]).await.expect("cached token");
        assert_eq!(requests(&throttled), (4, 1));

        for (answers, code, api_requests) in [
            // Out of attempts (three here).
            (vec![Answer::Status(503); 3], "mail.unavailable", 3),
            (vec![Answer::UsageLimit; 3], "mail.rate_limited", 3),
            // A wait longer than twenty seconds is not waited for.
            (vec![Answer::RetryAfter(3600)], "mail.rate_limited", 1),
            // A refusal is final.
            (vec![Answer::Status(404)], "mail.rejected", 1),
        ] {
            let setup = setup(MailScope::Read, &answers).await;
            let error = client(&setup.endpoints)
                .read(credential, "threads", &[("q", "in:sent".to_owned())])
                .await
                .expect_err("fails");
            assert_eq!((error.code(), requests(&setup).0), (code, api_requests), "{answers:?}");
        }

        // A refused refresh token, or a grant without the document's scope: rejected, and no
        // API request is made.
        for grant in [None, Some(MailScope::Send.url().to_owned())] {
            let setup = setup(MailScope::Read, &[]).await;
            *setup.provider.grant.lock().expect("lock") = grant;
            let error = client(&setup.endpoints)
                .read(credential, "labels", &[])
                .await
                .expect_err("rejected");
            assert_eq!((error, requests(&setup)), (MailError::CredentialRejected, (0, 1)));
        }
    }
}

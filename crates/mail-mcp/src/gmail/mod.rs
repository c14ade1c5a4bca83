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
mod tests;

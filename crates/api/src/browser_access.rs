//! The API's side of Website Access: a client of the browser role's loopback control plane
//! (`BROWSER_CONTROL_URL`, with the control-plane credential `BROWSER_CONTROL_CREDENTIAL_FILE`),
//! through which it begins sign-in ceremonies, reads their secret-free status and forgets
//! removed profiles; and the role's outside address (`BROWSER_PUBLIC_URL`), where clients hand
//! sessions over (`/handoff`) or sign in remotely (`/sign-in`). A capability passes through
//! once, from the role to the answer that begins the ceremony; it is never stored or logged.

use std::time::Duration;

use domain::ErrorCode;
use domain::env::{Env, EnvError, invalid};
use serde::Deserialize;
use uuid::Uuid;
use wire::browser::CeremonyState;

use crate::problem::ApiError;

/// How long one control-plane request may take.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(15);

/// The browser role, as the API reaches it.
#[derive(Clone)]
pub struct BrowserAccess {
    control: url::Url,
    credential: String,
    public: url::Url,
    client: reqwest::Client,
}

impl std::fmt::Debug for BrowserAccess {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("BrowserAccess")
            .field("control", &self.control.as_str())
            .field("public", &self.public.as_str())
            .finish_non_exhaustive()
    }
}

#[derive(Debug, thiserror::Error)]
pub enum BrowserAccessError {
    #[error("{0}")]
    Env(#[from] EnvError),
    #[error("BROWSER_CONTROL_CREDENTIAL_FILE: {0}")]
    Credential(#[from] hardening::secret_file::SecretFileError),
    #[error("the browser role's client cannot be made: {0}")]
    Client(String),
}

/// What the control plane says of a ceremony.
#[derive(Debug, Deserialize)]
struct ControlStatus {
    state: CeremonyState,
}

#[derive(Debug, Deserialize)]
struct Begun {
    capability: String,
    expires_at: i64,
}

#[derive(Debug, Deserialize)]
struct ControlProblem {
    code: String,
    #[serde(default)]
    detail: Option<String>,
}

impl BrowserAccess {
    pub fn new(control: url::Url, credential: String, public: url::Url) -> Result<BrowserAccess, BrowserAccessError> {
        let client = reqwest::Client::builder()
            .timeout(CONTROL_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| BrowserAccessError::Client(error.to_string()))?;
        Ok(BrowserAccess {
            control,
            credential,
            public,
            client,
        })
    }

    /// `BROWSER_CONTROL_URL` (loopback `http`, default `http://127.0.0.1:8005`),
    /// `BROWSER_CONTROL_CREDENTIAL_FILE` (owner-only) and `BROWSER_PUBLIC_URL` (`https`, or
    /// `http` on loopback for a local stack).
    pub fn from_env(env: &Env) -> Result<BrowserAccess, BrowserAccessError> {
        let control_text = env
            .get("BROWSER_CONTROL_URL")
            .filter(|value| !value.is_empty())
            .unwrap_or_else(|| "http://127.0.0.1:8005".to_owned());
        let control = url::Url::parse(&control_text)
            .ok()
            .filter(|url| url.scheme() == "http" && is_loopback(url))
            .ok_or_else(|| {
                invalid(
                    "BROWSER_CONTROL_URL",
                    "an http:// address on loopback (the browser role's control plane)",
                )
            })?;
        let path = env.required("BROWSER_CONTROL_CREDENTIAL_FILE")?;
        let credential = hardening::secret_file::read_credential(std::path::Path::new(&path))?;
        let public_text = env.required("BROWSER_PUBLIC_URL")?;
        let public = url::Url::parse(&public_text)
            .ok()
            .filter(|url| url.scheme() == "https" || (url.scheme() == "http" && is_loopback(url)))
            .filter(|url| url.path() == "/" && url.query().is_none() && url.fragment().is_none())
            .ok_or_else(|| {
                invalid(
                    "BROWSER_PUBLIC_URL",
                    "an https:// address with no path (http:// only on loopback) where clients reach the browser role",
                )
            })?;
        BrowserAccess::new(control, credential, public)
    }

    fn control(&self, path: &str) -> String {
        format!("{}{}", self.control.as_str().trim_end_matches('/'), path)
    }

    fn public(&self, path: &str) -> String {
        format!("{}{}", self.public.as_str().trim_end_matches('/'), path)
    }

    /// Where a device ceremony's session goes.
    pub fn handoff_url(&self) -> String {
        self.public("/handoff")
    }

    /// The link `Continue in web browser` opens: the capability in the fragment, which no
    /// server or log sees.
    pub fn continue_url(&self, capability: &str) -> String {
        self.public(&format!("/sign-in#c={capability}"))
    }

    async fn send(&self, request: reqwest::RequestBuilder) -> Result<reqwest::Response, ApiError> {
        request.bearer_auth(&self.credential).send().await.map_err(|error| {
            tracing::warn!(
                connect = error.is_connect(),
                timeout = error.is_timeout(),
                "the browser role cannot be reached"
            );
            unavailable()
        })
    }

    /// Begins ceremony `ceremony` for `profile` and its `origins` (remote with `login_url`):
    /// the capability and its expiry (seconds since the Unix epoch).
    pub async fn begin(
        &self,
        ceremony: Uuid,
        profile: Uuid,
        origins: &[String],
        login_url: Option<&str>,
    ) -> Result<(String, i64), ApiError> {
        let mut body = serde_json::json!({"profile": profile.to_string(), "origins": origins});
        if let Some(login_url) = login_url {
            body["login_url"] = serde_json::Value::from(login_url);
        }
        let answer = self
            .send(
                self.client
                    .put(self.control(&format!("/control/v1/ceremonies/{ceremony}")))
                    .json(&body),
            )
            .await?;
        if answer.status().is_success() {
            let begun: Begun = answer.json().await.map_err(|_| unavailable())?;
            return Ok((begun.capability, begun.expires_at));
        }
        Err(refusal(answer).await)
    }

    /// The ceremony's state as the role knows it; `None` when it does not (it restarted, or
    /// forgot a ceremony settled over an hour ago).
    pub async fn status(&self, ceremony: Uuid) -> Result<Option<CeremonyState>, ApiError> {
        let answer = self
            .send(
                self.client
                    .get(self.control(&format!("/control/v1/ceremonies/{ceremony}"))),
            )
            .await?;
        if answer.status() == reqwest::StatusCode::NOT_FOUND {
            return Ok(None);
        }
        if !answer.status().is_success() {
            return Err(refusal(answer).await);
        }
        let status: ControlStatus = answer.json().await.map_err(|_| {
            tracing::warn!("the browser role answered a ceremony's status in an unknown form");
            unavailable()
        })?;
        Ok(Some(status.state))
    }

    /// Whether the role keeps a session for `profile`.
    pub async fn holds_session(&self, profile: Uuid) -> Result<bool, ApiError> {
        #[derive(Deserialize)]
        struct Held {
            session: bool,
        }
        let answer = self
            .send(
                self.client
                    .get(self.control(&format!("/control/v1/profiles/{profile}"))),
            )
            .await?;
        if !answer.status().is_success() {
            return Err(refusal(answer).await);
        }
        let held: Held = answer.json().await.map_err(|_| unavailable())?;
        Ok(held.session)
    }

    /// Cancels ceremony `ceremony` (one begun for a profile removed meanwhile).
    pub async fn cancel(&self, ceremony: Uuid) -> Result<(), ApiError> {
        let answer = self
            .send(
                self.client
                    .delete(self.control(&format!("/control/v1/ceremonies/{ceremony}"))),
            )
            .await?;
        if answer.status().is_success() || answer.status() == reqwest::StatusCode::NOT_FOUND {
            Ok(())
        } else {
            Err(refusal(answer).await)
        }
    }

    /// Forgets `profile`: its ceremonies are cancelled, its browsers closed and its session
    /// removed.
    pub async fn forget(&self, profile: Uuid) -> Result<(), ApiError> {
        let answer = self
            .send(
                self.client
                    .delete(self.control(&format!("/control/v1/profiles/{profile}"))),
            )
            .await?;
        if answer.status().is_success() {
            Ok(())
        } else {
            Err(refusal(answer).await)
        }
    }
}

fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name == "localhost",
        None => false,
    }
}

fn unavailable() -> ApiError {
    ApiError::new(ErrorCode::BrowserUnavailable)
}

/// A control-plane refusal as the API's error: an origin or login page off the profile's
/// origins is the caller's; anything else means the browser role cannot serve now.
async fn refusal(answer: reqwest::Response) -> ApiError {
    let status = answer.status().as_u16();
    let problem: Option<ControlProblem> = answer.json().await.ok();
    match problem {
        Some(problem) if problem.code == "browser.origin_not_allowed" => {
            ApiError::new(ErrorCode::BrowserOriginRefused).detail(problem.detail.unwrap_or_default())
        }
        problem => {
            let code = problem.map(|problem| problem.code);
            tracing::warn!(
                status,
                code = code.as_deref().unwrap_or("none"),
                "the browser role refused a request"
            );
            unavailable()
        }
    }
}

//! The API's side of Website Access: a client of the browser role's loopback control plane
//! (`BROWSER_CONTROL_URL`, with the control-plane credential `BROWSER_CONTROL_CREDENTIAL_FILE`),
//! through which it begins sign-in ceremonies, reads their secret-free status and forgets
//! removed profiles; and the role's outside address (`BROWSER_PUBLIC_URL`), where clients hand
//! sessions over (`/handoff`) or sign in remotely (`/sign-in`). A capability passes through
//! once, from the role to the answer that begins the ceremony; it is never stored or logged.

use std::time::Duration;

use browser_control::{ControlPlane, ControlPlaneError, Refused};
use domain::ErrorCode;
use domain::env::{Env, invalid};
use reqwest::Method;
use serde::Deserialize;
use uuid::Uuid;
use wire::browser::CeremonyState;

use crate::problem::ApiError;

/// How long one control-plane request may take.
const CONTROL_TIMEOUT: Duration = Duration::from_secs(15);

/// The browser role, as the API reaches it.
#[derive(Clone, Debug)]
pub struct BrowserAccess {
    control: ControlPlane,
    public: url::Url,
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

impl BrowserAccess {
    pub fn new(control: url::Url, credential: String, public: url::Url) -> Result<BrowserAccess, ControlPlaneError> {
        Ok(BrowserAccess {
            control: ControlPlane::new(control, credential, CONTROL_TIMEOUT)?,
            public,
        })
    }

    /// The control plane (`BROWSER_CONTROL_URL`, `BROWSER_CONTROL_CREDENTIAL_FILE`: see
    /// `browser_control`) and `BROWSER_PUBLIC_URL` (`https`, or `http` on loopback for a local
    /// stack).
    pub fn from_env(env: &Env) -> Result<BrowserAccess, ControlPlaneError> {
        let control = ControlPlane::from_env(env, CONTROL_TIMEOUT)?;
        let public_text = env.required("BROWSER_PUBLIC_URL")?;
        let public = url::Url::parse(&public_text)
            .ok()
            .filter(|url| url.scheme() == "https" || (url.scheme() == "http" && browser_control::is_loopback(url)))
            .filter(|url| url.path() == "/" && url.query().is_none() && url.fragment().is_none())
            .ok_or_else(|| {
                invalid(
                    "BROWSER_PUBLIC_URL",
                    "an https:// address with no path (http:// only on loopback) where clients reach the browser role",
                )
            })?;
        Ok(BrowserAccess { control, public })
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
        let request = self
            .control
            .request(Method::PUT, &format!("/control/v1/ceremonies/{ceremony}"))
            .json(&body);
        let begun: Begun = self.control.json(request).await.map_err(refusal)?;
        Ok((begun.capability, begun.expires_at))
    }

    /// The ceremony's state as the role knows it; `None` when it does not (it restarted, or
    /// forgot a ceremony settled over an hour ago).
    pub async fn status(&self, ceremony: Uuid) -> Result<Option<CeremonyState>, ApiError> {
        let request = self
            .control
            .request(Method::GET, &format!("/control/v1/ceremonies/{ceremony}"));
        match self.control.json::<ControlStatus>(request).await {
            Ok(status) => Ok(Some(status.state)),
            Err(refused) if refused.is_not_found() => Ok(None),
            Err(refused) => Err(refusal(refused)),
        }
    }

    /// Whether the role keeps a session for `profile`.
    pub async fn holds_session(&self, profile: Uuid) -> Result<bool, ApiError> {
        #[derive(Deserialize)]
        struct Held {
            session: bool,
        }
        let request = self
            .control
            .request(Method::GET, &format!("/control/v1/profiles/{profile}"));
        let held: Held = self.control.json(request).await.map_err(refusal)?;
        Ok(held.session)
    }

    /// Cancels ceremony `ceremony` (one begun for a profile removed meanwhile).
    pub async fn cancel(&self, ceremony: Uuid) -> Result<(), ApiError> {
        let request = self
            .control
            .request(Method::DELETE, &format!("/control/v1/ceremonies/{ceremony}"));
        match self.control.send(request).await {
            Ok(_) => Ok(()),
            Err(refused) if refused.is_not_found() => Ok(()),
            Err(refused) => Err(refusal(refused)),
        }
    }

    /// Forgets `profile`: its ceremonies are cancelled, its browsers closed and its session
    /// removed.
    pub async fn forget(&self, profile: Uuid) -> Result<(), ApiError> {
        let request = self
            .control
            .request(Method::DELETE, &format!("/control/v1/profiles/{profile}"));
        self.control.send(request).await.map(drop).map_err(refusal)
    }
}

/// A control-plane refusal as the API's error: an origin or login page off the profile's
/// origins is the caller's; anything else means the browser role cannot serve now.
fn refusal(refused: Refused) -> ApiError {
    match refused {
        Refused::Problem {
            code: Some(code),
            detail,
            ..
        } if code == "browser.origin_not_allowed" => {
            ApiError::new(ErrorCode::BrowserOriginRefused).detail(detail.unwrap_or_default())
        }
        Refused::Problem { status, code, .. } => {
            tracing::warn!(
                status,
                code = code.as_deref().unwrap_or("none"),
                "the browser role refused a request"
            );
            ApiError::new(ErrorCode::BrowserUnavailable)
        }
        Refused::Unreachable => ApiError::new(ErrorCode::BrowserUnavailable),
    }
}

//! The browser role's control plane as its callers reach it: the api (Website Access's
//! ceremonies and profiles) and the worker (`browser.act`). One client for both: the loopback
//! address (`BROWSER_CONTROL_URL`, `http` on loopback only, default `http://127.0.0.1:8005`),
//! the control-plane credential (`BROWSER_CONTROL_CREDENTIAL_FILE`, owner-only, sent as a
//! bearer and never logged), no redirects, a timeout per request, and the role's refusals
//! read from its problem documents. What each caller makes of a refusal is its own.

use std::time::Duration;

use domain::env::{Env, EnvError, invalid};
use serde::Deserialize;
use serde::de::DeserializeOwned;

/// The control plane's address when `BROWSER_CONTROL_URL` is unset.
pub const DEFAULT_URL: &str = "http://127.0.0.1:8005";

#[derive(Debug, thiserror::Error)]
pub enum ControlPlaneError {
    #[error("{0}")]
    Env(#[from] EnvError),
    #[error("BROWSER_CONTROL_CREDENTIAL_FILE: {0}")]
    Credential(#[from] hardening::secret_file::SecretFileError),
    #[error("the browser role's client cannot be made: {0}")]
    Client(String),
}

/// Why a request did not succeed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refused {
    /// The role could not be reached, or answered in a form it never uses.
    Unreachable,
    /// The role answered with an error status and, when it sent one, its problem document's
    /// `code` and `detail`.
    Problem {
        status: u16,
        code: Option<String>,
        detail: Option<String>,
    },
}

impl Refused {
    /// Whether the role answered `404` (no such task, ceremony or profile).
    pub fn is_not_found(&self) -> bool {
        matches!(self, Refused::Problem { status: 404, .. })
    }

    /// The problem's code, when the role sent one.
    pub fn code(&self) -> Option<&str> {
        match self {
            Refused::Problem { code, .. } => code.as_deref(),
            Refused::Unreachable => None,
        }
    }
}

#[derive(Debug, Deserialize)]
struct Problem {
    code: String,
    #[serde(default)]
    detail: Option<String>,
}

/// The browser role's control plane.
#[derive(Clone)]
pub struct ControlPlane {
    base: url::Url,
    credential: String,
    client: reqwest::Client,
}

impl std::fmt::Debug for ControlPlane {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("ControlPlane")
            .field("base", &self.base.as_str())
            .finish_non_exhaustive()
    }
}

impl ControlPlane {
    /// The control plane at `base` with `credential`, each request bounded by `timeout`.
    pub fn new(base: url::Url, credential: String, timeout: Duration) -> Result<ControlPlane, ControlPlaneError> {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|error| ControlPlaneError::Client(error.to_string()))?;
        Ok(ControlPlane {
            base,
            credential,
            client,
        })
    }

    /// `BROWSER_CONTROL_URL` (loopback `http`, default [`DEFAULT_URL`]) and
    /// `BROWSER_CONTROL_CREDENTIAL_FILE` (owner-only).
    pub fn from_env(env: &Env, timeout: Duration) -> Result<ControlPlane, ControlPlaneError> {
        let text = env
            .get("BROWSER_CONTROL_URL")
            .filter(|value| !value.is_empty())
            .unwrap_or_else(|| DEFAULT_URL.to_owned());
        let base = url::Url::parse(&text)
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
        ControlPlane::new(base, credential, timeout)
    }

    /// A request to `path` (from `/control/v1/…`) with `method`.
    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        self.client
            .request(method, format!("{}{path}", self.base.as_str().trim_end_matches('/')))
    }

    /// Sends `request` with the credential: the answer when it succeeded, else why not.
    pub async fn send(&self, request: reqwest::RequestBuilder) -> Result<reqwest::Response, Refused> {
        let answer = request.bearer_auth(&self.credential).send().await.map_err(|error| {
            tracing::warn!(
                connect = error.is_connect(),
                timeout = error.is_timeout(),
                "the browser role cannot be reached"
            );
            Refused::Unreachable
        })?;
        if answer.status().is_success() {
            return Ok(answer);
        }
        let status = answer.status().as_u16();
        let problem: Option<Problem> = answer.json().await.ok();
        Err(Refused::Problem {
            status,
            code: problem.as_ref().map(|problem| problem.code.clone()),
            detail: problem.and_then(|problem| problem.detail),
        })
    }

    /// Sends `request` and reads its answer as `T` (an answer in another form counts as
    /// [`Refused::Unreachable`]: the role never sends one).
    pub async fn json<T: DeserializeOwned>(&self, request: reqwest::RequestBuilder) -> Result<T, Refused> {
        self.send(request).await?.json().await.map_err(|_| {
            tracing::warn!("the browser role answered in an unknown form");
            Refused::Unreachable
        })
    }
}

/// Whether `url` names a loopback host (`127.0.0.0/8`, `::1` or `localhost`).
pub fn is_loopback(url: &url::Url) -> bool {
    match url.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(name)) => name == "localhost",
        None => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, String)]) -> impl Fn(&str) -> Option<String> + use<> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(name, value)| ((*name).to_owned(), value.clone()))
            .collect();
        move |name| {
            pairs
                .iter()
                .find(|(key, _)| key == name)
                .map(|(_, value)| value.clone())
        }
    }

    fn credential_file(dir: &tempfile::TempDir) -> String {
        use std::os::unix::fs::PermissionsExt as _;
        let path = dir.path().join("credential");
        std::fs::write(&path, "a-control-plane-credential-of-enough-bytes").expect("write");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).expect("chmod");
        path.display().to_string()
    }

    #[test]
    fn the_address_is_loopback_http_and_the_credential_owner_only() {
        let dir = tempfile::tempdir().expect("a directory");
        let credential = credential_file(&dir);
        let timeout = Duration::from_secs(1);
        for accepted in [
            "",
            "http://127.0.0.1:9005",
            "http://[::1]:8005/",
            "http://localhost:8005",
        ] {
            let lookup = env(&[
                ("BROWSER_CONTROL_URL", accepted.to_owned()),
                ("BROWSER_CONTROL_CREDENTIAL_FILE", credential.clone()),
            ]);
            assert!(
                ControlPlane::from_env(&Env::new(&lookup), timeout).is_ok(),
                "{accepted}"
            );
        }
        for refused in [
            "https://127.0.0.1:8005",
            "http://10.0.0.8:8005",
            "http://browser.example:8005",
            "nonsense",
        ] {
            let lookup = env(&[
                ("BROWSER_CONTROL_URL", refused.to_owned()),
                ("BROWSER_CONTROL_CREDENTIAL_FILE", credential.clone()),
            ]);
            let error = ControlPlane::from_env(&Env::new(&lookup), timeout).expect_err(refused);
            assert!(error.to_string().contains("BROWSER_CONTROL_URL"), "{refused}: {error}");
        }
        let lookup = env(&[]);
        let error = ControlPlane::from_env(&Env::new(&lookup), timeout).expect_err("no credential");
        assert!(error.to_string().contains("BROWSER_CONTROL_CREDENTIAL_FILE"), "{error}");
    }

    #[tokio::test]
    async fn answers_refusals_and_silence_are_told_apart() {
        use axum::routing::get;
        let app = axum::Router::new()
            .route(
                "/control/v1/ok",
                get(|headers: axum::http::HeaderMap| async move {
                    let bearer = headers
                        .get("authorization")
                        .and_then(|value| value.to_str().ok())
                        .unwrap_or_default()
                        .to_owned();
                    axum::Json(serde_json::json!({ "bearer": bearer }))
                }),
            )
            .route(
                "/control/v1/refused",
                get(|| async {
                    (
                        axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                        axum::Json(
                            serde_json::json!({"code": "browser.origin_not_allowed", "detail": "not on the profile"}),
                        ),
                    )
                }),
            );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let plane = ControlPlane::new(
            url::Url::parse(&format!("http://{address}")).expect("a url"),
            "the-credential".into(),
            Duration::from_secs(5),
        )
        .expect("a client");
        let answered: serde_json::Value = plane
            .json(plane.request(reqwest::Method::GET, "/control/v1/ok"))
            .await
            .expect("an answer");
        assert_eq!(answered["bearer"], "Bearer the-credential");
        let refused = plane
            .send(plane.request(reqwest::Method::GET, "/control/v1/refused"))
            .await
            .expect_err("a refusal");
        assert_eq!(
            refused,
            Refused::Problem {
                status: 422,
                code: Some("browser.origin_not_allowed".into()),
                detail: Some("not on the profile".into()),
            }
        );
        let missing = plane
            .send(plane.request(reqwest::Method::GET, "/control/v1/none"))
            .await
            .expect_err("not found");
        assert!(missing.is_not_found() && missing.code().is_none(), "{missing:?}");
        let silent = ControlPlane::new(
            url::Url::parse("http://127.0.0.1:9").expect("a url"),
            "the-credential".into(),
            Duration::from_secs(5),
        )
        .expect("a client");
        assert_eq!(
            silent
                .send(silent.request(reqwest::Method::GET, "/control/v1/ok"))
                .await
                .expect_err("nobody listens"),
            Refused::Unreachable
        );
    }
}

//! The browser role's control plane, on loopback: whoever holds the browser control-plane
//! credential (`BROWSER_CONTROL_CREDENTIAL_FILE`, the worker that runs `browser.act`) opens a
//! task's browser for a profile's origins, navigates it within them, reads its page, acts on
//! one element, and closes it. Errors are problem documents with a stable `code`.
//!
//! | Method and path | Body | Answer |
//! |---|---|---|
//! | `GET /health/ready` | | 200, no credential needed |
//! | `PUT /control/v1/tasks/{task}` | `{"origins": ["https://…"]}` | 201 opened, 200 already open |
//! | `POST /control/v1/tasks/{task}/navigate` | `{"url": "https://…"}` | the page's snapshot |
//! | `GET /control/v1/tasks/{task}/page` | | the page's snapshot |
//! | `POST /control/v1/tasks/{task}/act` | `{"element": "e3", "label": "…", "action": {"kind": "click"}}` | the snapshot after it |
//! | `DELETE /control/v1/tasks/{task}` | | 204, or 404 when none was open |
//! | `PUT /control/v1/ceremonies/{id}` | `{"profile": "…", "origins": […], "login_url"?: "https://…"}` | 201 `{capability, expires_at}`: the capability is in this answer only |
//! | `GET /control/v1/ceremonies/{id}` | | `{state, profile, expires_at}`, secret-free |
//! | `DELETE /control/v1/ceremonies/{id}` | | 204: cancelled |
//! | `GET /control/v1/profiles/{id}` | | `{"session": bool}`: whether a session is kept for it |
//! | `DELETE /control/v1/profiles/{id}` | | 204: its session removed, its browsers closed |
//!
//! `PUT /control/v1/tasks/{task}` may name a `profile`: the browser starts with its sealed
//! session.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use browser_policy::egress::Origin;
use serde::Deserialize;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

use crate::ceremony::{Ceremonies, Kind, Status};
use crate::page::{Action, PageError, Snapshot};
use crate::tasks::{Browsers, TaskError, on_origins};

/// The control plane's state: the browsers, the ceremonies and the credential's digest.
pub struct Control {
    browsers: Arc<Browsers>,
    ceremonies: Arc<Ceremonies>,
    credential: [u8; 32],
}

impl Control {
    pub fn new(browsers: Arc<Browsers>, ceremonies: Arc<Ceremonies>, credential: &[u8]) -> Control {
        Control {
            browsers,
            ceremonies,
            credential: Sha256::digest(credential).into(),
        }
    }
}

/// The routes, over `control`.
pub fn router(control: Arc<Control>) -> axum::Router {
    axum::Router::new()
        .route("/health/ready", get(|| async { "ready" }))
        .route("/control/v1/tasks/{task}", put(open).delete(close))
        .route("/control/v1/tasks/{task}/navigate", post(navigate))
        .route("/control/v1/tasks/{task}/page", get(read))
        .route("/control/v1/tasks/{task}/act", post(act))
        .route(
            "/control/v1/ceremonies/{ceremony}",
            put(begin).get(ceremony_status).delete(cancel),
        )
        .route("/control/v1/profiles/{profile}", get(profile_session).delete(forget))
        .with_state(control)
}

/// An error answer: `application/problem+json` with a stable `code`.
#[derive(Debug)]
pub struct Problem {
    status: StatusCode,
    code: &'static str,
    detail: String,
}

impl Problem {
    pub fn new(status: StatusCode, code: &'static str, detail: impl Into<String>) -> Problem {
        Problem {
            status,
            code,
            detail: detail.into(),
        }
    }
}

impl IntoResponse for Problem {
    fn into_response(self) -> Response {
        let body = serde_json::json!({
            "type": format!("urn:steward:problem:{}", self.code),
            "title": self.code,
            "status": self.status.as_u16(),
            "code": self.code,
            "detail": self.detail,
        });
        (
            self.status,
            [(header::CONTENT_TYPE, "application/problem+json")],
            body.to_string(),
        )
            .into_response()
    }
}

impl From<TaskError> for Problem {
    fn from(error: TaskError) -> Problem {
        let detail = error.to_string();
        let (status, code) = match &error {
            TaskError::NoTask => (StatusCode::NOT_FOUND, "browser.no_task"),
            TaskError::NoPage => (StatusCode::CONFLICT, "browser.no_page"),
            TaskError::Busy => (StatusCode::SERVICE_UNAVAILABLE, "browser.busy"),
            TaskError::Conflict => (StatusCode::CONFLICT, "browser.task_conflict"),
            TaskError::Origin(_) => (StatusCode::UNPROCESSABLE_ENTITY, "browser.origin_not_allowed"),
            TaskError::Page(PageError::NoElement(_)) => (StatusCode::NOT_FOUND, "browser.no_element"),
            TaskError::Page(PageError::Changed { .. }) => (StatusCode::CONFLICT, "browser.page_changed"),
            TaskError::Page(PageError::Unsupported(_)) => {
                (StatusCode::UNPROCESSABLE_ENTITY, "browser.unsupported_action")
            }
            TaskError::Page(PageError::Browser(_)) | TaskError::Launch(_) => {
                (StatusCode::BAD_GATEWAY, "browser.failed")
            }
            TaskError::Directory(_) | TaskError::Proxy(_) | TaskError::Vault(_) => {
                (StatusCode::INTERNAL_SERVER_ERROR, "browser.failed")
            }
        };
        // A browser's own error can carry page text, a page address or typed text: it is
        // neither logged nor answered, only its code.
        if status.is_server_error() {
            // Which part failed, but not the browser's words: a launch's error is the driver's
            // own (it carries no page content); the others are named only.
            match &error {
                TaskError::Launch(launch) => {
                    tracing::warn!(code, %launch, "browser control: the browser did not start")
                }
                TaskError::Page(_) => tracing::warn!(code, "browser control: the page's browser failed"),
                _ => tracing::warn!(code, "browser control: the browser's files or proxy failed"),
            }
            return Problem::new(status, code, "the browser failed; try again");
        }
        Problem::new(status, code, detail)
    }
}

fn invalid(rejection: JsonRejection) -> Problem {
    Problem::new(StatusCode::BAD_REQUEST, "invalid_request", rejection.body_text())
}

/// The credential check: `Authorization: Bearer <credential>`, compared in constant time.
fn authorize(control: &Control, headers: &HeaderMap) -> Result<(), Problem> {
    let presented = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .map(|token| Sha256::digest(token.as_bytes()));
    match presented {
        Some(digest) if bool::from(digest.as_slice().ct_eq(&control.credential)) => Ok(()),
        _ => Err(Problem::new(
            StatusCode::UNAUTHORIZED,
            "unauthorized",
            "the browser control-plane credential is missing or wrong",
        )),
    }
}

/// A task's, profile's or ceremony's name: 1 to 64 letters, digits and dashes (the callers use
/// UUIDs). A profile's names its sealed file.
fn name(name: &str, what: &str) -> Result<(), Problem> {
    if !name.is_empty() && name.len() <= 64 && name.bytes().all(|byte| byte.is_ascii_alphanumeric() || byte == b'-') {
        Ok(())
    } else {
        Err(Problem::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            format!("{what} is named by 1 to 64 letters, digits and dashes"),
        ))
    }
}

fn task_name(task: &str) -> Result<(), Problem> {
    name(task, "a task")
}

/// A profile's origins: at least one, each an exact public HTTPS origin; sorted, without
/// repeats.
fn origins(texts: &[String]) -> Result<Vec<Origin>, Problem> {
    if texts.is_empty() {
        return Err(Problem::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "at least one origin is needed",
        ));
    }
    let mut origins = Vec::with_capacity(texts.len());
    for origin in texts {
        let parsed = Origin::parse(origin).map_err(|error| {
            Problem::new(
                StatusCode::UNPROCESSABLE_ENTITY,
                "browser.origin_not_allowed",
                format!("`{origin}`: {error}"),
            )
        })?;
        if !origins.contains(&parsed) {
            origins.push(parsed);
        }
    }
    origins.sort();
    Ok(origins)
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct OpenRequest {
    origins: Vec<String>,
    /// The profile whose sealed session the browser starts with (and keeps, refreshed, when it
    /// closes).
    #[serde(default)]
    profile: Option<String>,
}

async fn open(
    State(control): State<Arc<Control>>,
    Path(task): Path<String>,
    headers: HeaderMap,
    body: Result<Json<OpenRequest>, JsonRejection>,
) -> Result<StatusCode, Problem> {
    authorize(&control, &headers)?;
    task_name(&task)?;
    let Json(request) = body.map_err(invalid)?;
    let origins = origins(&request.origins)?;
    if let Some(profile) = &request.profile {
        name(profile, "a profile")?;
    }
    // Launched apart from the request: a client that goes away mid-launch leaves no
    // half-opened task behind.
    let browsers = Arc::clone(&control.browsers);
    let opened = tokio::spawn(async move { browsers.open(&task, origins, request.profile).await })
        .await
        .map_err(|_| {
            Problem::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                "browser.failed",
                "the browser failed; try again",
            )
        })??;
    Ok(if opened { StatusCode::CREATED } else { StatusCode::OK })
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct NavigateRequest {
    url: String,
}

async fn navigate(
    State(control): State<Arc<Control>>,
    Path(task): Path<String>,
    headers: HeaderMap,
    body: Result<Json<NavigateRequest>, JsonRejection>,
) -> Result<Json<Snapshot>, Problem> {
    authorize(&control, &headers)?;
    task_name(&task)?;
    let Json(request) = body.map_err(invalid)?;
    Ok(Json(control.browsers.navigate(&task, &request.url).await?))
}

async fn read(
    State(control): State<Arc<Control>>,
    Path(task): Path<String>,
    headers: HeaderMap,
) -> Result<Json<Snapshot>, Problem> {
    authorize(&control, &headers)?;
    task_name(&task)?;
    Ok(Json(control.browsers.read(&task).await?))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ActRequest {
    element: String,
    label: String,
    /// Where the element must lead (a link's address, its form's), when the caller knows.
    #[serde(default)]
    target: Option<String>,
    action: Action,
}

async fn act(
    State(control): State<Arc<Control>>,
    Path(task): Path<String>,
    headers: HeaderMap,
    body: Result<Json<ActRequest>, JsonRejection>,
) -> Result<Json<Snapshot>, Problem> {
    authorize(&control, &headers)?;
    task_name(&task)?;
    let Json(request) = body.map_err(invalid)?;
    let reference = request.element.strip_prefix('e').unwrap_or_default();
    if reference.is_empty() || reference.len() > 3 || !reference.bytes().all(|byte| byte.is_ascii_digit()) {
        return Err(Problem::new(
            StatusCode::BAD_REQUEST,
            "invalid_request",
            "an element is named by its reference, e0 to e199",
        ));
    }
    tracing::info!(target: "steward::audit", task = %task, action = request.action.name(), element = %request.element, "browser action");
    Ok(Json(
        control
            .browsers
            .act(
                &task,
                &request.element,
                &request.label,
                request.target.as_deref(),
                &request.action,
            )
            .await?,
    ))
}

async fn close(
    State(control): State<Arc<Control>>,
    Path(task): Path<String>,
    headers: HeaderMap,
) -> Result<StatusCode, Problem> {
    authorize(&control, &headers)?;
    task_name(&task)?;
    if control.browsers.close(&task).await {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(TaskError::NoTask.into())
    }
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct BeginRequest {
    profile: String,
    origins: Vec<String>,
    /// A remote ceremony's login page (on one of the origins); absent for a device ceremony.
    #[serde(default)]
    login_url: Option<String>,
}

/// Begins a ceremony: the capability is in this answer only.
async fn begin(
    State(control): State<Arc<Control>>,
    Path(ceremony): Path<String>,
    headers: HeaderMap,
    body: Result<Json<BeginRequest>, JsonRejection>,
) -> Result<(StatusCode, Json<serde_json::Value>), Problem> {
    authorize(&control, &headers)?;
    name(&ceremony, "a ceremony")?;
    let Json(request) = body.map_err(invalid)?;
    name(&request.profile, "a profile")?;
    let origins = origins(&request.origins)?;
    let kind = match &request.login_url {
        None => Kind::Device,
        Some(login) => Kind::Remote {
            login: on_origins(&origins, login).map_err(Problem::from)?,
        },
    };
    let (capability, expires_at) = control
        .ceremonies
        .begin(&ceremony, &request.profile, origins, kind)
        .ok_or_else(|| {
            Problem::new(
                StatusCode::CONFLICT,
                "browser.ceremony_exists",
                "this ceremony was already begun",
            )
        })?;
    Ok((
        StatusCode::CREATED,
        Json(serde_json::json!({"capability": capability, "expires_at": expires_at})),
    ))
}

async fn ceremony_status(
    State(control): State<Arc<Control>>,
    Path(ceremony): Path<String>,
    headers: HeaderMap,
) -> Result<Json<Status>, Problem> {
    authorize(&control, &headers)?;
    name(&ceremony, "a ceremony")?;
    control.ceremonies.status(&ceremony).map(Json).ok_or_else(no_ceremony)
}

async fn cancel(
    State(control): State<Arc<Control>>,
    Path(ceremony): Path<String>,
    headers: HeaderMap,
) -> Result<StatusCode, Problem> {
    authorize(&control, &headers)?;
    name(&ceremony, "a ceremony")?;
    if control.ceremonies.cancel(&ceremony) {
        Ok(StatusCode::NO_CONTENT)
    } else {
        Err(no_ceremony())
    }
}

fn no_ceremony() -> Problem {
    Problem::new(StatusCode::NOT_FOUND, "browser.no_ceremony", "no such ceremony")
}

/// Forgets a profile: its open ceremonies are cancelled and its sealed session removed.
async fn forget(
    State(control): State<Arc<Control>>,
    Path(profile): Path<String>,
    headers: HeaderMap,
) -> Result<StatusCode, Problem> {
    authorize(&control, &headers)?;
    name(&profile, "a profile")?;
    control.ceremonies.cancel_profile(&profile);
    control.browsers.forget(&profile).await?;
    Ok(StatusCode::NO_CONTENT)
}

/// Whether a session is kept for a profile (for a ceremony whose status the role no longer
/// holds: its profile signed in, or not).
async fn profile_session(
    State(control): State<Arc<Control>>,
    Path(profile): Path<String>,
    headers: HeaderMap,
) -> Result<Json<serde_json::Value>, Problem> {
    authorize(&control, &headers)?;
    name(&profile, "a profile")?;
    Ok(Json(
        serde_json::json!({"session": control.browsers.holds_session(&profile)}),
    ))
}

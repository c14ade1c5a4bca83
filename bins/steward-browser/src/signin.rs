//! The remote sign-in page, on the handoff address beside `/handoff`: for a remote ceremony the
//! owner opens `<public address>/sign-in#c=<capability>` (the capability in the fragment, which
//! no server or log sees), and signs in to the website in a browser of this role, seen as a
//! picture and driven by clicks, typed text and a few keys. `I'm signed in` keeps the browser's
//! session for the profile's origins (sealed) and ends the ceremony; `Close` ends it keeping
//! nothing. The page itself holds no secret: its script takes the capability out of the address
//! at once, opens the ceremony with it once (`POST /sign-in/start`) and then works with a page
//! token of its own, in memory, so a reloaded page cannot continue.
//!
//! | Route | Credential | Answer |
//! |---|---|---|
//! | `GET /sign-in`, `/sign-in/app.js`, `/sign-in/app.css` | none | the page |
//! | `POST /sign-in/start` | the capability | `{token, deadline}`; the browser opens at the login page |
//! | `GET /sign-in/screen` | the page token | a PNG of the website |
//! | `POST /sign-in/input` | the page token | `{"kind": "click", x, y}`, `{"kind": "text", text}` or `{"kind": "key", key}`: 204 |
//! | `POST /sign-in/finish` | the page token | the session sealed, the ceremony completed: 204 (`422 browser.not_signed_in` with no session yet) |
//! | `POST /sign-in/close` | the page token | the ceremony cancelled, nothing kept: 204 |

use std::sync::Arc;

use axum::Json;
use axum::extract::State;
use axum::extract::rejection::JsonRejection;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};

use crate::ceremony::{Refusal, Signing, State as CeremonyState};
use crate::control::Problem;
use crate::outside::Handoff;
use crate::page::Input;
use crate::storage::Refused;
use crate::tasks::TaskError;

const PAGE: &str = include_str!("../assets/sign-in.html");
const SCRIPT: &str = include_str!("../assets/sign-in.js");
const STYLE: &str = include_str!("../assets/sign-in.css");

/// What the page may load and where it may connect: its own script, style and address, the
/// website's picture as a blob; nothing else, and it is framed by no one.
const POLICY: &str = "default-src 'none'; script-src 'self'; style-src 'self'; img-src blob:; connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/// The browser of a ceremony's sign-in page; a name the control plane cannot address.
pub fn task(ceremony: &str) -> String {
    format!("sign-in:{ceremony}")
}

pub fn routes() -> axum::Router<Arc<Handoff>> {
    axum::Router::new()
        .route("/sign-in", get(|| async { asset(PAGE, "text/html; charset=utf-8") }))
        .route(
            "/sign-in/app.js",
            get(|| async { asset(SCRIPT, "text/javascript; charset=utf-8") }),
        )
        .route(
            "/sign-in/app.css",
            get(|| async { asset(STYLE, "text/css; charset=utf-8") }),
        )
        .route("/sign-in/start", post(start))
        .route("/sign-in/screen", get(screen))
        .route("/sign-in/input", post(input))
        .route("/sign-in/finish", post(finish))
        .route("/sign-in/close", post(close))
}

fn asset(body: &'static str, content_type: &'static str) -> Response {
    let mut response = body.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(POLICY));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    response
}

fn bearer(headers: &HeaderMap) -> Result<&str, Problem> {
    headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .ok_or_else(|| refused(Refusal::Unknown))
}

fn refused(refusal: Refusal) -> Problem {
    let (status, code) = match refusal {
        Refusal::Unknown => (StatusCode::UNAUTHORIZED, "browser.capability_invalid"),
        Refusal::Used => (StatusCode::CONFLICT, "browser.capability_used"),
        Refusal::Expired => (StatusCode::GONE, "browser.ceremony_expired"),
    };
    Problem::new(status, code, refusal.to_string())
}

/// The open sign-in page's ceremony, by its page token (with its profile's generation).
fn signing(handoff: &Handoff, headers: &HeaderMap) -> Result<Signing, Problem> {
    let vault = &handoff.vault;
    handoff
        .ceremonies
        .signing(bearer(headers)?, |profile| vault.generation(profile))
        .map_err(refused)
}

fn finishing() -> Problem {
    Problem::new(
        StatusCode::CONFLICT,
        "browser.ceremony_finishing",
        "the sign-in is being kept; it can no longer be closed",
    )
}

async fn start(State(handoff): State<Arc<Handoff>>, headers: HeaderMap) -> Result<Response, Problem> {
    let opened = handoff.ceremonies.activate(bearer(&headers)?).map_err(refused)?;
    let task = task(&opened.id);
    // Launched apart from the request: a page that goes away mid-launch leaves no browser
    // behind (the ceremony is active; its sweep closes it).
    let browsers = Arc::clone(&handoff.browsers);
    let (name, origins, login) = (task.clone(), opened.origins.clone(), opened.login.clone());
    let launched = tokio::spawn(async move {
        browsers.open(&name, origins, None).await?;
        browsers.navigate(&name, login.as_str()).await.map(|_| ())
    })
    .await
    .unwrap_or(Err(TaskError::NoTask));
    if let Err(error) = launched {
        // Nothing was signed in: the same link may be opened again while it lasts.
        handoff.browsers.close(&task).await;
        handoff.ceremonies.reopen(&opened.id);
        tracing::info!(target: "steward::audit", ceremony = %opened.id, outcome = "not_started", "browser sign-in page");
        return Err(error.into());
    }
    tracing::info!(target: "steward::audit", ceremony = %opened.id, outcome = "opened", "browser sign-in page");
    let mut response = Json(serde_json::json!({"token": opened.token, "deadline": opened.deadline})).into_response();
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

async fn screen(State(handoff): State<Arc<Handoff>>, headers: HeaderMap) -> Result<Response, Problem> {
    let ceremony = signing(&handoff, &headers)?;
    let picture = handoff.browsers.screenshot(&task(&ceremony.id)).await?;
    let mut response = picture.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("image/png"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(response)
}

async fn input(
    State(handoff): State<Arc<Handoff>>,
    headers: HeaderMap,
    body: Result<Json<Input>, JsonRejection>,
) -> Result<StatusCode, Problem> {
    let ceremony = signing(&handoff, &headers)?;
    let Json(input) =
        body.map_err(|rejection| Problem::new(StatusCode::BAD_REQUEST, "invalid_request", rejection.body_text()))?;
    handoff.browsers.input(&task(&ceremony.id), &input).await?;
    Ok(StatusCode::NO_CONTENT)
}

async fn finish(State(handoff): State<Arc<Handoff>>, headers: HeaderMap) -> Result<StatusCode, Problem> {
    let ceremony = signing(&handoff, &headers)?;
    if !handoff.ceremonies.claim(&ceremony.id) {
        return Err(finishing());
    }
    // Apart from the request: a page that goes away meanwhile still releases or settles the
    // claim.
    tokio::spawn(keep(handoff, ceremony)).await.unwrap_or_else(|_| {
        Err(Problem::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "browser.failed",
            "the sign-in could not be kept",
        ))
    })
}

/// Harvests the claimed ceremony's browser and seals its session; the claim is released on
/// every way out but success.
async fn keep(handoff: Arc<Handoff>, ceremony: Signing) -> Result<StatusCode, Problem> {
    let task = task(&ceremony.id);
    let generation = ceremony.generation;
    let harvested = handoff.browsers.harvest(&task).await;
    let mut session = match harvested {
        Ok(session) => session,
        Err(error) => {
            handoff.ceremonies.release(&ceremony.id);
            return Err(error.into());
        }
    };
    if let Err(refusal) = session.check(&ceremony.origins) {
        handoff.ceremonies.release(&ceremony.id);
        // Nothing yet (or nothing of the profile's): the owner may still sign in.
        let detail = match refusal {
            Refused::Empty => "the website holds no session yet".to_owned(),
            other => other.to_string(),
        };
        return Err(Problem::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "browser.not_signed_in",
            detail,
        ));
    }
    match handoff.vault.seal_if(&ceremony.profile, &session, generation) {
        Ok(true) => {}
        Ok(false) => {
            handoff.ceremonies.release(&ceremony.id);
            handoff.ceremonies.end(&ceremony.id, CeremonyState::Cancelled);
            handoff.browsers.close(&task).await;
            return Err(Problem::new(
                StatusCode::CONFLICT,
                "browser.ceremony_cancelled",
                "the profile was removed or signed in again meanwhile; nothing was kept",
            ));
        }
        Err(error) => {
            handoff.ceremonies.release(&ceremony.id);
            tracing::warn!("browser sign-in page: {error}");
            return Err(TaskError::from(error).into());
        }
    }
    handoff.ceremonies.settle(&ceremony.id, true);
    handoff.browsers.close(&task).await;
    tracing::info!(target: "steward::audit", ceremony = %ceremony.id, outcome = "completed", "browser sign-in page");
    Ok(StatusCode::NO_CONTENT)
}

async fn close(State(handoff): State<Arc<Handoff>>, headers: HeaderMap) -> Result<StatusCode, Problem> {
    let ceremony = signing(&handoff, &headers)?;
    if !handoff.ceremonies.end(&ceremony.id, CeremonyState::Cancelled) {
        return Err(finishing());
    }
    handoff.browsers.close(&task(&ceremony.id)).await;
    tracing::info!(target: "steward::audit", ceremony = %ceremony.id, outcome = "closed", "browser sign-in page");
    Ok(StatusCode::NO_CONTENT)
}

/// Closes the browsers of sign-in pages that ended without their page saying so (expired,
/// replaced by `Start over`, cancelled over the control plane).
pub async fn sweep(handoff: &Handoff) {
    for ceremony in handoff.ceremonies.ended_pages() {
        handoff.browsers.close(&task(&ceremony)).await;
    }
}

//! The handoff address: the one route of the role a client reaches from outside (through the
//! reverse proxy). `POST /handoff` with `Authorization: Bearer <capability>` and the website
//! session as JSON ([`SiteData`], at most [`MAX_SESSION_BYTES`]) hands a signed-in session to
//! the ceremony's profile, once. Accepted, it is sealed into the profile (204); refused, the
//! ceremony is over and nothing is kept (`422 browser.handoff_rejected`). A capability that is
//! unknown (401), already used (409) or expired (410) hands over nothing. The body is never
//! logged; the audit line names the ceremony and the outcome.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::JsonRejection;
use axum::extract::{DefaultBodyLimit, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::routing::{get, post};

use crate::ceremony::Refusal;
use crate::control::Problem;
use crate::storage::{MAX_SESSION_BYTES, SiteData};

pub use crate::outside::Handoff;

pub fn router(handoff: Arc<Handoff>) -> axum::Router {
    axum::Router::new()
        .route("/health/ready", get(|| async { "ready" }))
        .route("/handoff", post(hand_over))
        .merge(crate::signin::routes())
        .layer(DefaultBodyLimit::max(MAX_SESSION_BYTES))
        .with_state(handoff)
}

async fn hand_over(
    State(handoff): State<Arc<Handoff>>,
    headers: HeaderMap,
    body: Result<Json<SiteData>, JsonRejection>,
) -> Result<StatusCode, Problem> {
    let capability = headers
        .get(header::AUTHORIZATION)
        .and_then(|value| value.to_str().ok())
        .and_then(|value| value.strip_prefix("Bearer "))
        .ok_or_else(|| {
            Problem::new(
                StatusCode::UNAUTHORIZED,
                "browser.capability_invalid",
                "no ceremony capability",
            )
        })?;
    let vault = &handoff.vault;
    let redeemed = handoff
        .ceremonies
        .redeem(capability, |profile| vault.generation(profile))
        .map_err(|refusal| {
            let (status, code) = match refusal {
                Refusal::Unknown => (StatusCode::UNAUTHORIZED, "browser.capability_invalid"),
                Refusal::Used => (StatusCode::CONFLICT, "browser.capability_used"),
                Refusal::Expired => (StatusCode::GONE, "browser.ceremony_expired"),
            };
            Problem::new(status, code, refusal.to_string())
        })?;
    // From here the capability is spent: the ceremony completes or is rejected. A profile
    // forgotten meanwhile advances its generation and the seal below is refused.
    let generation = redeemed.generation;
    let reject = |status: StatusCode, code: &'static str, detail: String| {
        handoff.ceremonies.settle(&redeemed.id, false);
        tracing::info!(target: "steward::audit", ceremony = %redeemed.id, outcome = code, "browser handoff");
        Problem::new(status, code, detail)
    };
    let mut data = match body {
        Ok(Json(data)) => data,
        Err(JsonRejection::BytesRejection(_)) => {
            return Err(reject(
                StatusCode::PAYLOAD_TOO_LARGE,
                "browser.session_too_large",
                format!("a website session is handed over in at most {MAX_SESSION_BYTES} bytes"),
            ));
        }
        Err(rejection) => {
            return Err(reject(
                StatusCode::BAD_REQUEST,
                "invalid_request",
                rejection.body_text(),
            ));
        }
    };
    if let Err(refused) = data.check(&redeemed.origins) {
        return Err(reject(
            StatusCode::UNPROCESSABLE_ENTITY,
            "browser.handoff_rejected",
            refused.to_string(),
        ));
    }
    match handoff.vault.seal_if(&redeemed.profile, &data, generation) {
        Ok(true) => {}
        Ok(false) => {
            return Err(reject(
                StatusCode::CONFLICT,
                "browser.ceremony_cancelled",
                "the profile was removed or signed in again meanwhile; nothing was kept".to_owned(),
            ));
        }
        Err(error) => {
            tracing::warn!("browser handoff: {error}");
            return Err(reject(
                StatusCode::INTERNAL_SERVER_ERROR,
                "browser.failed",
                "the session could not be kept".to_owned(),
            ));
        }
    }
    handoff.ceremonies.settle(&redeemed.id, true);
    tracing::info!(target: "steward::audit", ceremony = %redeemed.id, outcome = "completed", "browser handoff");
    Ok(StatusCode::NO_CONTENT)
}

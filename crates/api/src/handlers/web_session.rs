//! Web sessions: the web client's credential. `POST` exchanges the bearer token for an
//! `HttpOnly`, `SameSite=Strict` cookie (see [`crate::auth`]); `GET` tells the page which
//! credential it holds and its scopes (the page cannot read the cookie); `DELETE` revokes it.

use axum::Extension;
use axum::Json as JsonResponse;
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use sha2::{Digest, Sha256};
use store::NewWebSession;
use wire::response::{WebSession, WebSessionCredential};

use crate::AppState;
use crate::auth::{Caller, Credential};
use crate::problem::ApiError;

fn scope_names(caller: &Caller) -> Vec<String> {
    caller.scopes.iter().map(|scope| scope.as_str().to_owned()).collect()
}

/// `response` marked for no cache to keep.
pub(crate) fn no_store(mut response: Response) -> Response {
    response
        .headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    response
}

/// Exchanges the bearer token for a web session: a random 256-bit secret goes to the browser in
/// the cookie, and only its SHA-256 digest is stored. Expired sessions, and those made under a
/// token that is no longer configured, are deleted on the way.
#[utoipa::path(
    post, path = "/v1/web/session", tag = "web",
    security(("bearer" = [])),
    responses((
        status = 201,
        description = "A web session: the `Set-Cookie` header carries its `HttpOnly`, `SameSite=Strict` cookie \
                       (`Secure` and named `__Host-steward_session` when the server is configured with an https \
                       web origin, `API_WEB_ORIGIN`; otherwise `steward_session`, made only for a page on \
                       loopback). Refused with `web_origin_refused` off loopback without that origin, or from a \
                       page of another origin",
        body = WebSession,
        headers(("Set-Cookie" = String, description = "The session cookie"))
    ))
)]
pub async fn exchange(
    State(state): State<AppState>,
    Extension(caller): Extension<Caller>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let authenticator = &state.settings.authenticator;
    authenticator.admits_exchange(&headers)?;
    let mut secret = [0u8; 32];
    getrandom::fill(&mut secret).map_err(|error| {
        tracing::error!(%error, "the system's random source failed");
        ApiError::new(domain::ErrorCode::Internal)
    })?;
    let secret = URL_SAFE_NO_PAD.encode(secret);
    let scopes = scope_names(&caller);
    let row = state
        .store
        .create_web_session(&NewWebSession {
            secret_digest: Sha256::digest(secret.as_bytes()).into(),
            token_binding: *authenticator.web_binding(),
            principal: &caller.principal,
            scopes: &scopes,
            ttl: authenticator.web_session_ttl(),
        })
        .await?;
    let body = WebSession {
        credential: WebSessionCredential::WebSession,
        scopes,
        expires_at: Some(row.expires_at),
    };
    let cookie = authenticator.session_cookie(&secret);
    Ok(no_store(
        (StatusCode::CREATED, [(header::SET_COOKIE, cookie)], JsonResponse(body)).into_response(),
    ))
}

/// The credential this request carries: a web session with its expiry, or the bearer token.
#[utoipa::path(
    get, path = "/v1/web/session", tag = "web",
    security(("bearer" = []), ("web_session" = [])),
    responses((status = 200, description = "The caller's credential and scopes", body = WebSession))
)]
pub async fn current(Extension(caller): Extension<Caller>) -> Response {
    let body = match caller.credential {
        Credential::Bearer => WebSession {
            credential: WebSessionCredential::Bearer,
            scopes: scope_names(&caller),
            expires_at: None,
        },
        Credential::WebSession { expires_at, .. } => WebSession {
            credential: WebSessionCredential::WebSession,
            scopes: scope_names(&caller),
            expires_at: Some(expires_at),
        },
    };
    no_store(JsonResponse(body).into_response())
}

/// Ends the web session this request carries, and tells the browser to drop its cookie. With
/// the bearer token there is no session to end; the answer is the same.
#[utoipa::path(
    delete, path = "/v1/web/session", tag = "web",
    security(("bearer" = []), ("web_session" = [])),
    responses((status = 204, description = "Ended; `Set-Cookie` clears the cookie"))
)]
pub async fn revoke(State(state): State<AppState>, Extension(caller): Extension<Caller>) -> Result<Response, ApiError> {
    if let Credential::WebSession { id, .. } = caller.credential {
        state.store.revoke_web_session(id).await?;
    }
    Ok(no_store(
        (
            StatusCode::NO_CONTENT,
            [(header::SET_COOKIE, state.settings.authenticator.clear_cookie())],
        )
            .into_response(),
    ))
}

//! Routes: what a route is ([`RouteDef`]: method, path, required scope, gating flag, error
//! codes) and the router built from the [`catalog`] (the one table of every route, in
//! `catalog.rs`).
//!
//! [`router`] mounts exactly the routes whose flag is on; an unmounted route falls through to the
//! 404 fallback before authentication, so a probe cannot tell it from a path that never existed.

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{MatchedPath, Request};
use axum::http::Method;
use axum::middleware::{self, Next};
use axum::response::Response;
use axum::routing::MethodRouter;
use domain::ErrorCode;
use domain::flags::{FeatureFlags, Flag};
use domain::scope::Scope;
use tracing::Instrument;

use crate::AppState;
use crate::auth::{self, Authenticator, Guard, Needs};
use crate::problem;

mod catalog;

pub use catalog::catalog;

/// Who may call a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// No credentials: readiness and the API description.
    Public,
    /// The bearer token or a web session, whose grants include this scope.
    Scoped(Scope),
    /// The bearer token or a web session, whatever its scopes.
    Authenticated,
    /// The bearer token itself (a web session is made from it, never from another one).
    BearerToken,
}

impl Access {
    /// What the guard in front of the route checks; `None` for a public route.
    pub fn needs(self) -> Option<Needs> {
        match self {
            Access::Public => None,
            Access::Scoped(scope) => Some(Needs::Scope(scope)),
            Access::Authenticated => Some(Needs::Credential),
            Access::BearerToken => Some(Needs::BearerToken),
        }
    }
}

/// One route of the API.
#[derive(Clone)]
pub struct RouteDef {
    pub method: Method,
    /// The path template in OpenAPI/axum syntax, e.g. `/v1/sessions/{session_id}`.
    pub path: &'static str,
    pub access: Access,
    /// The flag that mounts the route; `None` for core routes.
    pub flag: Option<Flag>,
    /// The OpenAPI `operationId`: the handler's module and name, e.g. `sessions.create`.
    pub operation_id: &'static str,
    /// The error codes the operation itself can answer with; authentication, authorization and
    /// internal errors are added from `access` (see [`RouteDef::errors`]).
    errors: Vec<ErrorCode>,
    make: fn() -> MethodRouter<AppState>,
}

impl std::fmt::Debug for RouteDef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}", self.method, self.path)
    }
}

impl RouteDef {
    pub fn is_mounted(&self, flags: &FeatureFlags) -> bool {
        self.flag.is_none_or(|flag| flags.is_on(flag))
    }

    /// Whether a web session needs the CSRF header to call the route: it can change state.
    pub fn changes_state(&self) -> bool {
        !matches!(self.method, Method::GET | Method::HEAD | Method::OPTIONS)
    }

    /// Every error code the route can answer with: its own, then `unauthenticated` for a route
    /// that takes credentials, `insufficient_scope` for a scoped one, `csrf_header_required` for
    /// one a web session can change state through, then `internal_error`, and
    /// `service_unavailable` (the database cannot be reached) for one that takes credentials.
    pub fn errors(&self) -> Vec<ErrorCode> {
        let mut errors = self.errors.clone();
        if self.access != Access::Public {
            errors.push(ErrorCode::Unauthenticated);
        }
        if matches!(self.access, Access::Scoped(_)) {
            errors.push(ErrorCode::InsufficientScope);
        }
        if matches!(self.access, Access::Scoped(_) | Access::Authenticated) && self.changes_state() {
            errors.push(ErrorCode::CsrfHeaderRequired);
        }
        errors.push(ErrorCode::Internal);
        if self.access != Access::Public {
            errors.push(ErrorCode::ServiceUnavailable);
        }
        errors
    }
}

pub(crate) fn router(state: AppState, authenticator: Arc<Authenticator>, site: Router) -> Router {
    let mut router = Router::new();
    for route in catalog()
        .into_iter()
        .filter(|route| route.is_mounted(&state.settings.flags))
    {
        let mut method_router = (route.make)();
        if let Some(needs) = route.access.needs() {
            let guard = Guard {
                authenticator: authenticator.clone(),
                store: state.store.clone(),
                needs,
            };
            method_router = method_router.route_layer(middleware::from_fn_with_state(guard, auth::require));
        }
        if route.path.starts_with("/v1/email/") {
            // Email answers hold mail: no cache keeps them (errors and refusals included).
            method_router = method_router.layer(middleware::map_response(|response: Response| async move {
                crate::handlers::web_session::no_store(response)
            }));
        }
        router = router.route(route.path, method_router);
    }
    // With an https web origin every answer tells the browser to use nothing but HTTPS here.
    let hsts = matches!(
        state.settings.authenticator.web_origin(),
        crate::auth::WebOrigin::Https(_)
    );
    let router = router
        .fallback(problem::not_found)
        .method_not_allowed_fallback(problem::method_not_allowed)
        .with_state(state)
        // The public site under its own path (`domain::site`: never the API's or the web
        // client's), without authentication.
        .merge(site)
        // The web client's assets under `/`: no path of theirs is an API path.
        .merge(crate::web::router())
        .layer(middleware::from_fn(crate::web::secure))
        .layer(middleware::from_fn(trace));
    if hsts {
        router.layer(middleware::map_response(crate::web::strict_transport))
    } else {
        router
    }
}

/// A span per request (`request{id method route}`: a fresh id, the route template, never the
/// query, which may hold cursors or search words), so every line a request logs names it; and
/// one line when it ends, with its status and duration.
async fn trace(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("<unmatched>", MatchedPath::as_str)
        .to_owned();
    let id = uuid::Uuid::new_v4().simple().to_string();
    let span = tracing::info_span!("request", id = &id[..12], %method, route);
    async move {
        let response = next.run(request).await;
        tracing::info!(
            status = response.status().as_u16(),
            elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
            "request done"
        );
        response
    }
    .instrument(span)
    .await
}

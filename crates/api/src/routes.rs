//! The route catalog: every route's method, path, required scope and gating flag, in one table.
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
use domain::flags::{FeatureFlags, Flag};
use domain::scope::Scope;

use crate::AppState;
use crate::auth::{self, Authenticator, Guard};
use crate::handlers::{
    approvals, artifacts, events, folders, health, memories, notifications, runs, schedules, sessions, settings,
};
use crate::{openapi, problem};

/// Who may call a route.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Access {
    /// No credentials: readiness and the API description.
    Public,
    /// A valid bearer token whose grants include this scope.
    Scoped(Scope),
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
}

macro_rules! route {
    ($method:ident $path:literal, $access:expr, $flag:expr, $handler:path) => {
        RouteDef {
            method: Method::$method,
            path: $path,
            access: $access,
            flag: $flag,
            make: || axum::routing::on(axum::routing::MethodFilter::$method, $handler),
        }
    };
}

/// Every route the API can serve.
pub fn catalog() -> Vec<RouteDef> {
    use Access::{Public, Scoped};
    use Scope::{
        MemoryRead, NotificationsRead, NotificationsWrite, SchedulesRead, SchedulesWrite, SessionsRead, SessionsWrite,
        SettingsRead, SettingsWrite,
    };
    vec![
        route!(GET "/health/ready", Public, None, health::ready),
        route!(GET "/v1/openapi.json", Public, None, openapi::serve),
        route!(POST "/v1/sessions", Scoped(SessionsWrite), None, sessions::create),
        route!(GET "/v1/sessions", Scoped(SessionsRead), None, sessions::list),
        route!(GET "/v1/sessions/{session_id}", Scoped(SessionsRead), None, sessions::get),
        route!(PATCH "/v1/sessions/{session_id}", Scoped(SessionsWrite), None, sessions::update),
        route!(DELETE "/v1/sessions/{session_id}", Scoped(SessionsWrite), None, sessions::delete),
        route!(POST "/v1/sessions/{session_id}/artifacts", Scoped(SessionsWrite), None, artifacts::upload),
        route!(GET "/v1/sessions/{session_id}/artifacts/{artifact_id}", Scoped(SessionsRead), None, artifacts::metadata),
        route!(GET "/v1/sessions/{session_id}/artifacts/{artifact_id}/content", Scoped(SessionsRead), None, artifacts::content),
        route!(POST "/v1/sessions/{session_id}/messages", Scoped(SessionsWrite), None, runs::submit),
        route!(GET "/v1/sessions/{session_id}/events", Scoped(SessionsRead), None, events::stream),
        route!(GET "/v1/runs/{run_id}", Scoped(SessionsRead), None, runs::get),
        route!(POST "/v1/runs/{run_id}/cancel", Scoped(SessionsWrite), None, runs::cancel),
        route!(POST "/v1/runs/{run_id}/input", Scoped(SessionsWrite), None, approvals::input),
        route!(GET "/v1/sessions/{session_id}/approvals", Scoped(SessionsRead), None, approvals::pending),
        route!(POST "/v1/approvals/{approval_id}/decision", Scoped(SessionsWrite), None, approvals::decide),
        route!(POST "/v1/schedules", Scoped(SchedulesWrite), None, schedules::create),
        route!(GET "/v1/schedules", Scoped(SchedulesRead), None, schedules::list),
        route!(GET "/v1/schedules/{schedule_id}", Scoped(SchedulesRead), None, schedules::get),
        route!(DELETE "/v1/schedules/{schedule_id}", Scoped(SchedulesWrite), None, schedules::cancel),
        route!(GET "/v1/schedules/{schedule_id}/occurrences", Scoped(SchedulesRead), None, schedules::occurrences),
        route!(GET "/v1/settings/models", Scoped(SettingsRead), None, settings::get),
        route!(PUT "/v1/settings/models", Scoped(SettingsWrite), None, settings::save),
        route!(GET "/v1/folders", Scoped(SessionsRead), None, folders::list),
        route!(POST "/v1/folders", Scoped(SessionsWrite), None, folders::create),
        route!(PATCH "/v1/folders/{folder_id}", Scoped(SessionsWrite), None, folders::rename),
        route!(DELETE "/v1/folders/{folder_id}", Scoped(SessionsWrite), None, folders::delete),
        route!(GET "/v1/memories", Scoped(MemoryRead), Some(Flag::MemoryApi), memories::list),
        route!(GET "/v1/notifications", Scoped(NotificationsRead), Some(Flag::NotificationApi), notifications::pending),
        route!(
            POST "/v1/notifications/{notification_id}/acknowledge",
            Scoped(NotificationsWrite),
            Some(Flag::NotificationApi),
            notifications::acknowledge
        ),
        route!(POST "/v1/devices", Scoped(NotificationsWrite), Some(Flag::NotificationApi), notifications::register),
        route!(
            DELETE "/v1/devices/{client_device_id}",
            Scoped(NotificationsWrite),
            Some(Flag::NotificationApi),
            notifications::revoke
        ),
    ]
}

pub(crate) fn router(state: AppState, authenticator: Arc<Authenticator>) -> Router {
    let mut router = Router::new();
    for route in catalog()
        .into_iter()
        .filter(|route| route.is_mounted(&state.settings.flags))
    {
        let mut method_router = (route.make)();
        if let Access::Scoped(scope) = route.access {
            let guard = Guard {
                authenticator: authenticator.clone(),
                scope,
            };
            method_router = method_router.route_layer(middleware::from_fn_with_state(guard, auth::require));
        }
        router = router.route(route.path, method_router);
    }
    router
        .fallback(problem::not_found)
        .method_not_allowed_fallback(problem::method_not_allowed)
        .layer(middleware::from_fn(trace))
        .with_state(state)
}

/// One log line per request: method, route template (never the query, which may hold cursors),
/// status and duration.
async fn trace(request: Request, next: Next) -> Response {
    let started = Instant::now();
    let method = request.method().clone();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or("<unmatched>", MatchedPath::as_str)
        .to_owned();
    let response = next.run(request).await;
    tracing::info!(
        %method,
        route,
        status = response.status().as_u16(),
        elapsed_ms = started.elapsed().as_secs_f64() * 1000.0,
        "request"
    );
    response
}

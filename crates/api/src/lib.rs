//! The `/v1` HTTP API: static bearer authentication with scopes, flag-gated routes, sessions,
//! folders, artifacts, readiness and the OpenAPI document.
//!
//! Every route is declared once, in [`routes::catalog`], with its method, path, scope and flag.
//! The router, the served OpenAPI document and the route × credential × flag test are all built
//! from that one table, so a route cannot exist without being documented, authorized and gated.

pub mod auth;
pub mod browser_access;
pub mod config;
mod extract;
mod handlers;
mod hub;
pub mod openapi;
pub mod problem;
pub mod routes;
pub mod site;
pub mod web;

/// The parsers of what a caller sends that are not a typed extractor's: each is fed arbitrary
/// bytes by the property tests in `tests/fuzz`.
pub mod untrusted {
    pub use crate::extract::parse as json_body;
    pub use crate::handlers::events::last_event_id;
}

use std::sync::Arc;

pub use axum::Router;
use domain::agent::AgentRegistry;
use domain::cursor::CursorCodec;
use domain::flags::FeatureFlags;
use store::Store;

pub use config::ApiConfig;

/// Shared state of every request handler.
#[derive(Clone, Debug)]
pub struct AppState {
    store: Store,
    settings: Arc<Settings>,
    hub: Arc<hub::EventHub>,
}

#[derive(Debug)]
struct Settings {
    authenticator: Arc<auth::Authenticator>,
    flags: FeatureFlags,
    agents: AgentRegistry,
    cursors: CursorCodec,
    artifact_max_bytes: u64,
    upload_idle_timeout: std::time::Duration,
    run_limits: domain::run::RunLimits,
    stream_heartbeat: std::time::Duration,
    offered_models: domain::models::Offered,
    mail_accounts: Option<domain::manifest::AccountIds>,
    /// The browser role, with `AGENT_BROWSER_ENABLED=1`.
    browser: Option<browser_access::BrowserAccess>,
    release: String,
    /// The VAPID public key web clients subscribe with, when Web Push is configured.
    web_push_public_key: Option<String>,
    /// The served OpenAPI document, made at its first request: building it runs every schema's
    /// code, which an API that is never asked for it need not keep resident.
    openapi_json: std::sync::OnceLock<String>,
}

impl Settings {
    /// The OpenAPI document of the mounted routes (made once).
    fn openapi_json(&self) -> &str {
        self.openapi_json.get_or_init(|| {
            openapi::document_json(&openapi::Described {
                flags: &self.flags,
                agent_ids: self
                    .agents
                    .iter()
                    .map(|agent| agent.configuration.id.as_str().to_owned())
                    .collect(),
                offered_models: &self.offered_models,
            })
        })
    }
}

/// Builds the application router for `config` on `store`.
pub fn app(config: ApiConfig, store: Store) -> Router {
    let authenticator = Arc::new(config.authenticator);
    let settings = Settings {
        authenticator: authenticator.clone(),
        flags: config.flags,
        agents: config.agents,
        cursors: config.cursors,
        artifact_max_bytes: config.artifact_max_bytes,
        upload_idle_timeout: config.upload_idle_timeout,
        run_limits: config.run_limits,
        stream_heartbeat: config.stream_heartbeat,
        offered_models: config.offered_models,
        mail_accounts: config.mail_accounts,
        browser: config.browser,
        release: config.release,
        web_push_public_key: config.web_push_public_key,
        openapi_json: std::sync::OnceLock::new(),
    };
    let site = site::router(&config.site, &settings.release);
    let hub = hub::EventHub::start(&store);
    let state = AppState {
        store,
        settings: Arc::new(settings),
        hub,
    };
    routes::router(state, authenticator, site)
}

/// Serves `app` on `listener` within `limits` (`listener::serve`: header and stall timeouts, a
/// connection cap) until `shutdown` completes, then lets in-flight requests finish. Connections
/// get `TCP_NODELAY`: small responses and event frames go out at once instead of waiting for
/// Nagle's algorithm (a 40 ms stall with delayed acknowledgements).
pub async fn serve(
    listener: tokio::net::TcpListener,
    app: Router,
    limits: listener::Limits,
    shutdown: impl std::future::Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    listener::serve(listener, app, limits, shutdown).await
}

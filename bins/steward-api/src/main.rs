//! The api role: serves `/v1` until SIGTERM or SIGINT, then drains in-flight requests.

use std::process::ExitCode;

use anyhow::Context;
use api::ApiConfig;

fn main() -> ExitCode {
    // Hardening and configuration happen before the runtime exists: a bad environment is one
    // clear line.
    role::main("steward-api", role::RoleKind::Application, serve)
}

async fn serve(mut config: ApiConfig) -> anyhow::Result<()> {
    config.release = release::IDENTITY.to_owned();
    let store = config.database.connect_lazy();
    let listener = tokio::net::TcpListener::bind(config.listen_addr)
        .await
        .with_context(|| format!("listen on {}", config.listen_addr))?;
    tracing::info!(addr = %listener.local_addr()?, release = %config.release, "steward-api listening");
    role::ready();
    let limits = config.listener;
    api::serve(listener, api::app(config, store), limits, role::shutdown_signal())
        .await
        .context("serve http")
}

//! The api role: serves `/v1` until SIGTERM or SIGINT, then drains in-flight requests.

use std::process::ExitCode;

use anyhow::Context;
use api::ApiConfig;
use store::Store;

fn main() -> ExitCode {
    // Configuration is validated before the runtime exists: a bad environment is one clear line.
    let config = match ApiConfig::from_env(|name| std::env::var(name).ok()) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("steward-api: {error}");
            return ExitCode::from(2);
        }
    };
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    tracing_subscriber::fmt()
        .with_max_level(config.log_level)
        .with_target(false)
        .with_ansi(ansi)
        .init();
    let result = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("start the async runtime")
        .and_then(|runtime| runtime.block_on(serve(config)));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!("{error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn serve(config: ApiConfig) -> anyhow::Result<()> {
    let store = Store::connect_lazy(&config.database_url, config.database_max_connections)
        .context("configure the database pool")?;
    let listener = tokio::net::TcpListener::bind(config.listen_addr)
        .await
        .with_context(|| format!("listen on {}", config.listen_addr))?;
    tracing::info!(addr = %listener.local_addr()?, release = %config.release, "steward-api listening");
    axum_serve(listener, api::app(config, store)).await
}

async fn axum_serve(listener: tokio::net::TcpListener, app: api::Router) -> anyhow::Result<()> {
    api::serve(listener, app, shutdown_signal()).await.context("serve http")
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = interrupt => {}
        _ = terminate => {}
    }
    tracing::info!("shutting down");
}

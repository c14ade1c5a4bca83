//! The worker role: claims queued runs and executes them until SIGTERM or SIGINT.

use std::process::ExitCode;

use agent::WorkerConfig;
use agent::executor::{Executor, Providers};
use anyhow::Context;
use store::Store;

fn main() -> ExitCode {
    let config = match WorkerConfig::from_env(|name| std::env::var(name).ok()) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("steward-worker: {error}");
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
        .and_then(|runtime| runtime.block_on(work(config)));
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!("{error:#}");
            ExitCode::FAILURE
        }
    }
}

async fn work(config: WorkerConfig) -> anyhow::Result<()> {
    let store = Store::connect_lazy(&config.database_url, config.database_max_connections)
        .context("configure the database pool")?;
    let http = reqwest::Client::builder().build().context("build the HTTP client")?;
    let openai = config
        .openai
        .clone()
        .map(|endpoint| agent::openai::provider(endpoint, http.clone()));
    let executor = Executor {
        store,
        providers: Providers::new(openai),
        http,
    };
    agent::worker::run(config, executor, shutdown_signal()).await;
    Ok(())
}

async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
}

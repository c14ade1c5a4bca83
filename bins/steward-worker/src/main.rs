//! The worker role: claims queued runs and executes them until SIGTERM or SIGINT.

use std::process::ExitCode;

use agent::WorkerConfig;
use agent::executor::{Executor, Providers};
use anyhow::Context;
use store::Store;

fn main() -> ExitCode {
    let config = match role::prepare("steward-worker", role::RoleKind::Application, || {
        WorkerConfig::from_env(|name| std::env::var(name).ok())
    }) {
        Ok(config) => config,
        Err(code) => return code,
    };
    role::run(config.log_level, work(config))
}

async fn work(config: WorkerConfig) -> anyhow::Result<()> {
    let store = Store::connect_lazy(&config.database_url, config.database_max_connections)
        .context("configure the database pool")?;
    let http = reqwest::Client::builder().build().context("build the HTTP client")?;
    let openai = config
        .openai
        .clone()
        .map(|endpoint| agent::openai::provider(endpoint, http.clone()));
    let mail = match config.mail.clone() {
        Some(accounts) => Some(std::sync::Arc::new(
            mail_mcp::tools::MailService::connect(accounts, config.mail_endpoints.clone())
                .context("build the mail provider client")?,
        )),
        None => None,
    };
    let executor = Executor {
        store,
        providers: Providers::new(openai),
        http,
        mail,
    };
    role::ready();
    agent::worker::run(config, executor, role::shutdown_signal()).await;
    Ok(())
}

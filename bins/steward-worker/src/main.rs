//! The worker role: claims queued runs and executes them until SIGTERM or SIGINT. With Email
//! mode (`AGENT_EMAIL_MODE_ENABLED=1`) it also runs Email mode's provider writes (archive, move
//! back, report spam, Not spam) with each account's write document, and with unsubscribe
//! assistance (`AGENT_EMAIL_UNSUBSCRIBE_ENABLED=1`) the confirmed unsubscribe commands through
//! its own one-click transport.

use std::process::ExitCode;

use agent::executor::{Executor, Providers};
use anyhow::Context;
use steward_worker::config::WorkerConfig;

fn main() -> ExitCode {
    role::main("steward-worker", role::RoleKind::Application, work)
}

async fn work(config: WorkerConfig) -> anyhow::Result<()> {
    let store = config.database.connect_lazy();
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
    // Email mode's writes share the mail tools' provider client: one quota pacing and one token
    // cache per process.
    let writes = match (&config.mail, &mail, config.email_mode) {
        (Some(accounts), Some(service), true) => {
            let writer = email::writes::Writer {
                store: store.clone(),
                gmail: service.client().clone(),
                accounts: accounts.accounts.clone(),
                worker_id: config.settings.worker_id.clone(),
                pace: email::writes::WritePace::default(),
            };
            Some(tokio::spawn(writer.run(role::shutdown_signal())))
        }
        _ => None,
    };
    // Unsubscribe commands, with the one-click transport this role alone owns.
    let unsubscribes = match (&config.mail, &mail, &config.unsubscribe) {
        (Some(accounts), Some(service), Some(transport)) => {
            let unsubscriber = email::unsubscribe::Unsubscriber {
                store: store.clone(),
                gmail: service.client().clone(),
                accounts: accounts.accounts.clone(),
                transport: transport.clone(),
                worker_id: config.settings.worker_id.clone(),
                pace: email::writes::WritePace::default(),
            };
            Some(tokio::spawn(unsubscriber.run(role::shutdown_signal())))
        }
        _ => None,
    };
    let executor = Executor {
        store,
        providers: Providers::new(openai),
        http,
        mail,
        subscriptions: config.unsubscribe.is_some(),
        calls: config.calls.clone().map(std::sync::Arc::new),
        browser: config.browser.clone().map(std::sync::Arc::new),
        memory: config.memory,
    };
    role::ready();
    agent::worker::run(config.settings, executor, role::shutdown_signal()).await;
    // The writer stops on the same signal, after the write in progress settles.
    if let Some(writes) = writes
        && let Err(error) = writes.await
    {
        tracing::error!(%error, "the email writes loop ended abnormally");
    }
    if let Some(unsubscribes) = unsubscribes
        && let Err(error) = unsubscribes.await
    {
        tracing::error!(%error, "the unsubscribe loop ended abnormally");
    }
    Ok(())
}

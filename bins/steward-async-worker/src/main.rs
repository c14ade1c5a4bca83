//! The async-worker role: keeps Email mode's mailbox projections. It refreshes every connected
//! account from the mail provider with the account's **read** document only (the write and send
//! documents are never opened, and a unit that loads one is refused), on the owner's request
//! and on a background cadence, until SIGTERM or SIGINT.
//!
//! | Variable | Meaning | Default |
//! |---|---|---|
//! | `DATABASE_URL` | PostgreSQL URL of the async-worker login | required |
//! | `AGENT_EMAIL_MODE_ENABLED` | must be `1`: without Email mode this role has nothing to do | required |
//! | `AGENT_EMAIL_ENABLED`, `MAIL_ACCOUNTS_FILE` (or the legacy three paths) | the same mail configuration as the other application roles; only read documents are loaded | required |
//! | `MAIL_API_BASE_URL`, `MAIL_OAUTH_TOKEN_URL` | the provider (https; plain http only to loopback) | Google's |
//! | `EMAIL_BACKFILL_DAYS` | how far back the first update reaches (the account's coverage) | `30` |
//! | `EMAIL_REFRESH_EVERY_SECONDS` | the background cadence: each account is updated at least this often | `300` |
//! | `EMAIL_CLASSIFIER` and its settings | `offline` (the documented rules) or `model` (the agent's model within the email cost allowances; see `email::classify::from_env`) | `offline` |
//! | `ASYNC_WORKER_ID` | this process's name in claims | `async-worker-<pid>-<random>` |
//! | `LOG_LEVEL` | as for the other roles | `info` |

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use domain::flags::{FeatureFlags, Flag};
use email::refresh::Refresher;
use email::worker::{AsyncWorker, Pace};
use mail_mcp::accounts::ReadAccount;
use mail_mcp::gmail::Endpoints;
use store::Store;

struct Config {
    database_url: String,
    accounts: Vec<ReadAccount>,
    endpoints: Endpoints,
    backfill_days: u32,
    classifier: email::classify::Classifier,
    pace: Pace,
    worker_id: String,
    log_level: tracing::Level,
}

fn config() -> Result<Config, String> {
    let get = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
    let flags = FeatureFlags::from_env(|name| std::env::var(name).ok()).map_err(|error| error.to_string())?;
    if !flags.is_on(Flag::EmailMode) {
        return Err("AGENT_EMAIL_MODE_ENABLED is not 1: Email mode is off and this role has nothing to do".into());
    }
    let accounts = mail_mcp::accounts::read_accounts_from_env(|name| std::env::var(name).ok())
        .map_err(|error| error.to_string())?
        .ok_or("Email mode needs the mail accounts: set AGENT_EMAIL_ENABLED=1 and MAIL_ACCOUNTS_FILE")?;
    let endpoints =
        Endpoints::from_env(get).map_err(|(variable, reason)| format!("{variable} is invalid: {reason}"))?;
    let number = |name: &'static str, default: u32| {
        role::positive(get(name).as_deref(), default).map_err(|reason| format!("{name} is invalid: {reason}"))
    };
    let backfill_days = number("EMAIL_BACKFILL_DAYS", email::refresh::DEFAULT_BACKFILL_DAYS)?;
    if backfill_days > 365 {
        return Err(format!(
            "EMAIL_BACKFILL_DAYS is invalid: `{backfill_days}` is more than 365"
        ));
    }
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(120))
        .build()
        .map_err(|error| format!("cannot build the model client: {error}"))?;
    let classifier = email::classify::from_env(get, http)?;
    Ok(Config {
        database_url: get("DATABASE_URL").ok_or("DATABASE_URL is required")?,
        accounts,
        endpoints,
        backfill_days,
        classifier,
        pace: Pace {
            cadence: Duration::from_secs(u64::from(number("EMAIL_REFRESH_EVERY_SECONDS", 300)?)),
            ..Pace::default()
        },
        worker_id: get("ASYNC_WORKER_ID").unwrap_or_else(|| {
            format!(
                "async-worker-{}-{}",
                std::process::id(),
                &uuid::Uuid::new_v4().simple().to_string()[..8]
            )
        }),
        log_level: role::log_level(get("LOG_LEVEL").as_deref())
            .map_err(|reason| format!("LOG_LEVEL is invalid: {reason}"))?,
    })
}

fn main() -> ExitCode {
    let config = match role::prepare("steward-async-worker", role::RoleKind::Application, config) {
        Ok(config) => config,
        Err(code) => return code,
    };
    role::run(config.log_level, work(config))
}

async fn work(config: Config) -> anyhow::Result<()> {
    let store = Store::connect_lazy(&config.database_url, 4).context("configure the database pool")?;
    let gmail = mail_mcp::gmail::GmailClient::new(config.endpoints).context("build the mail provider client")?;
    let worker = AsyncWorker {
        refresher: Refresher {
            store,
            gmail: Arc::new(gmail),
            backfill: jiff::SignedDuration::from_hours(24 * i64::from(config.backfill_days)),
            classifier: Arc::new(config.classifier),
        },
        accounts: config.accounts,
        worker_id: config.worker_id,
        pace: config.pace,
    };
    role::ready();
    worker.run(role::shutdown_signal()).await;
    Ok(())
}

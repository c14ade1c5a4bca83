//! The call worker: settles the call provider's receipts into call records (with the
//! `call_finished` notification in the same transaction), dispatches approved outbound calls
//! once, reconciles uncertain dispatches from the provider's history, ends calls past their
//! duration (`steward_call_worker::CallWorker::pass`). Transcripts and summaries expire after
//! 30 days in the maintenance role (`store::retention`).
//!
//! | Variable | Meaning | Default |
//! |---|---|---|
//! | `DATABASE_URL` | PostgreSQL URL of the call login | required |
//! | `AGENT_CALL_ENABLED` | must be `1` | required |
//! | `AGENT_CALL_NOTIFICATIONS_ENABLED` | `1`: commit `call_finished` notifications (needs both notification flags, equal, as in the API's environment) | `0` |
//! | `CALLPROV_BASE_URL` | the call provider's API | required |
//! | `CALLPROV_API_KEY_FILE` | the provider's API key, owner-only | required |
//! | `CALLPROV_CONFIGURATION_FILE` | the call configuration (operator-writable only) | required |
//! | `CALL_WORKER_POLL_SECONDS` | how often a pass runs without a receipt's wake-up | `5` |
//! | `LOG_LEVEL` | as for the other roles | `info` |
//!
//! It holds no owner bearer, no model credential and no scopes: it refuses to start with a model
//! key (any `*_API_KEY`, a model vendor's key variable), `BROWSER_CONTROL_CREDENTIAL_FILE`,
//! `API_TOKEN_FILE`, a non-empty `AUTH_SCOPES` or an inline `CALLPROV_API_KEY`.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use callprov::key::{Endpoint, KeyError};
use callprov::{Client, LoadError};
use domain::env::{Env, EnvError, FromEnv};
use domain::flags::Flag;
use sqlx_listener::listen;
use steward_call_worker::CallWorker;

mod sqlx_listener;

#[derive(Debug, thiserror::Error)]
enum ConfigError {
    #[error("{0}")]
    Env(#[from] EnvError),
    #[error("{0}")]
    Provider(#[from] KeyError),
    #[error("CALLPROV_CONFIGURATION_FILE: {0}")]
    Configuration(#[from] LoadError),
}

struct Config {
    database: store::Database,
    endpoint: Endpoint,
    configuration: PathBuf,
    notify: bool,
    poll: Duration,
}

impl FromEnv for Config {
    type Error = ConfigError;

    fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let env = Env::new(&lookup);
        let flags = env.requiring(Flag::Call, "calling is off")?;
        let configuration = PathBuf::from(env.required("CALLPROV_CONFIGURATION_FILE")?);
        // Refused at start when it is not valid; read again on every dispatch.
        callprov::config::load(&configuration)?;
        Ok(Config {
            database: store::Database::from_env(&env, 4)?,
            endpoint: Endpoint::from_env(&lookup)?,
            configuration,
            notify: flags.is_on(Flag::CallNotifications),
            poll: Duration::from_secs(u64::from(env.positive("CALL_WORKER_POLL_SECONDS", 5)?)),
        })
    }
}

fn main() -> ExitCode {
    role::main("steward-call-worker", role::RoleKind::CallWorker, work)
}

async fn work(config: Config) -> anyhow::Result<()> {
    let store = config.database.connect_lazy();
    let worker = CallWorker {
        store: store.clone(),
        client: Client::new(config.endpoint),
        configuration: config.configuration,
        notify: config.notify,
    };
    // The number answers from the public profile before anything else happens.
    worker.activate().await?;
    tracing::info!("the number's settings are in force");
    let wake = std::sync::Arc::new(tokio::sync::Notify::new());
    tokio::spawn(listen(store, wake.clone()));
    let shutdown = role::shutdown_signal();
    tokio::pin!(shutdown);
    tracing::info!(notifications = config.notify, "steward-call-worker started");
    role::ready();
    loop {
        match worker.pass(jiff::Timestamp::now()).await {
            Ok(pass) if pass != steward_call_worker::Pass::default() => tracing::info!(?pass, "call pass"),
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "call pass failed"),
        }
        tokio::select! {
            () = tokio::time::sleep(config.poll) => {}
            () = wake.notified() => {}
            () = &mut shutdown => return Ok(()),
        }
    }
}

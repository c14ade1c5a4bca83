//! The notify role: delivers due notifications to every active device over APNs until SIGTERM
//! or SIGINT.
//!
//! | Variable | Meaning | Default |
//! |---|---|---|
//! | `DATABASE_URL` | PostgreSQL URL of the notify login | required |
//! | `AGENT_NOTIFICATION_API_ENABLED`, `AGENT_NOTIFICATION_DISPATCH_ENABLED` | both `1`: delivery is on | required |
//! | `APNS_TEAM_ID`, `APNS_KEY_ID` | the provider token's issuer and key id | required |
//! | `APNS_KEY_FILE` | the `.p8` signing key, owner-only | required |
//! | `APNS_TOPIC` | the app's bundle id | required |
//! | `APNS_SANDBOX_URL`, `APNS_PRODUCTION_URL` | provider hosts | Apple's |
//! | `APNS_CA_FILE` | an extra trusted root certificate (PEM) | unset |
//! | `NOTIFY_WORKER_ID` | this process's name in claims | `notify-<pid>-<random>` |
//! | `NOTIFY_LEASE_SECONDS` | claim length; a crashed notifier's claims expire after it | `30` |
//! | `NOTIFY_POLL_MILLISECONDS` | how often due notifications are looked for | `1000` |
//! | `LOG_LEVEL` | as for the other roles | `info` |

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use domain::env::{Env, EnvError, FromEnv};
use domain::flags::Flag;
use hardening::secret_file::SecretFileError;
use notify::apns::{Apns, ApnsConfig};
use notify::dispatch::Dispatcher;

#[derive(Debug, thiserror::Error)]
enum ConfigError {
    #[error("{0}")]
    Env(#[from] EnvError),
    #[error("APNS_KEY_FILE: {0}")]
    KeyFile(#[from] SecretFileError),
    #[error("APNS_CA_FILE: {path}: {error}")]
    CaFile { path: String, error: std::io::Error },
}

struct Config {
    database: store::Database,
    apns: ApnsConfig,
    worker: String,
    lease_seconds: u32,
    poll: Duration,
}

impl FromEnv for Config {
    type Error = ConfigError;

    fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let env = Env::new(&lookup);
        env.requiring(Flag::NotificationDispatch, "notification delivery is off")?;
        let key_path = env.required("APNS_KEY_FILE")?;
        let key_pem = hardening::secret_file::read_owner_only(Path::new(&key_path))?;
        let extra_root_pem = match env.get("APNS_CA_FILE") {
            None => None,
            Some(path) => Some(std::fs::read(&path).map_err(|error| ConfigError::CaFile { path, error })?),
        };
        Ok(Config {
            database: store::Database::from_env(&env, 4)?,
            apns: ApnsConfig {
                team_id: env.required("APNS_TEAM_ID")?,
                key_id: env.required("APNS_KEY_ID")?,
                key_pem,
                topic: env.required("APNS_TOPIC")?,
                sandbox_url: env
                    .get("APNS_SANDBOX_URL")
                    .unwrap_or_else(|| "https://api.sandbox.push.apple.com".into()),
                production_url: env
                    .get("APNS_PRODUCTION_URL")
                    .unwrap_or_else(|| "https://api.push.apple.com".into()),
                extra_root_pem,
            },
            worker: env
                .get("NOTIFY_WORKER_ID")
                .unwrap_or_else(|| role::instance_id("notify")),
            lease_seconds: env.positive("NOTIFY_LEASE_SECONDS", 30)?,
            poll: Duration::from_millis(u64::from(env.positive("NOTIFY_POLL_MILLISECONDS", 1000)?)),
        })
    }
}

fn main() -> ExitCode {
    role::main("steward-notify", role::RoleKind::Application, deliver)
}

async fn deliver(config: Config) -> anyhow::Result<()> {
    let store = config.database.connect_lazy();
    let apns = Apns::new(config.apns).context("configure the APNs client")?;
    let dispatcher = Dispatcher {
        store,
        apns,
        worker: config.worker,
        lease_seconds: config.lease_seconds,
    };
    let shutdown = role::shutdown_signal();
    tokio::pin!(shutdown);
    tracing::info!("steward-notify started");
    role::ready();
    loop {
        match dispatcher.pass(jiff::Timestamp::now()).await {
            Ok(pass) if pass != notify::dispatch::Pass::default() => tracing::info!(?pass, "delivered"),
            Ok(_) => {}
            Err(error) => tracing::warn!(%error, "delivery pass failed"),
        }
        tokio::select! {
            () = tokio::time::sleep(config.poll) => {}
            () = &mut shutdown => return Ok(()),
        }
    }
}

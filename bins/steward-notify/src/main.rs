//! The notify role: delivers due notifications to every active device, over APNs and Web Push,
//! until SIGTERM or SIGINT. At least one of the two is configured.
//!
//! | Variable | Meaning | Default |
//! |---|---|---|
//! | `DATABASE_URL` | PostgreSQL URL of the notify login | required |
//! | `AGENT_NOTIFICATION_API_ENABLED`, `AGENT_NOTIFICATION_DISPATCH_ENABLED` | both `1`: delivery is on | required |
//! | `APNS_TOPIC` | the app's bundle id; set, APNs is on | unset |
//! | `APNS_TEAM_ID`, `APNS_KEY_ID` | the provider token's issuer and key id | required with APNs |
//! | `APNS_KEY_FILE` | the `.p8` signing key, owner-only | required with APNs |
//! | `APNS_SANDBOX_URL`, `APNS_PRODUCTION_URL` | provider hosts | Apple's |
//! | `APNS_CA_FILE` | an extra trusted root certificate (PEM) | unset |
//! | `WEB_PUSH_SUBJECT` | the VAPID contact (`mailto:` or `https:`); set, Web Push is on | unset |
//! | `WEB_PUSH_VAPID_KEY_FILE` | the VAPID P-256 key (PKCS#8 PEM), owner-only | required with Web Push |
//! | `WEB_PUSH_CA_FILE` | an extra trusted root certificate (PEM) for push services | unset |
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
use notify::dispatch::{Dispatcher, Providers};
use notify::webpush::{WebPush, WebPushConfig};

#[derive(Debug, thiserror::Error)]
enum ConfigError {
    #[error("{0}")]
    Env(#[from] EnvError),
    #[error("{variable}: {error}")]
    KeyFile {
        variable: &'static str,
        error: SecretFileError,
    },
    #[error("{variable}: {path}: {error}")]
    CaFile {
        variable: &'static str,
        path: String,
        error: std::io::Error,
    },
    #[error("WEB_PUSH_VAPID_KEY_FILE: {0}")]
    VapidKey(notify::webpush::WebPushError),
    #[error("no push provider is configured: set APNS_TOPIC (APNs) or WEB_PUSH_SUBJECT (Web Push), or both")]
    NoProvider,
}

struct Config {
    database: store::Database,
    apns: Option<ApnsConfig>,
    web_push: Option<WebPushConfig>,
    worker: String,
    lease_seconds: u32,
    poll: Duration,
}

fn key_file(env: &Env<'_>, variable: &'static str) -> Result<Vec<u8>, ConfigError> {
    let path = env.required(variable)?;
    hardening::secret_file::read_owner_only(Path::new(&path)).map_err(|error| ConfigError::KeyFile { variable, error })
}

fn ca_file(env: &Env<'_>, variable: &'static str) -> Result<Option<Vec<u8>>, ConfigError> {
    env.get(variable)
        .map(|path| std::fs::read(&path).map_err(|error| ConfigError::CaFile { variable, path, error }))
        .transpose()
}

fn apns(env: &Env<'_>) -> Result<Option<ApnsConfig>, ConfigError> {
    let Some(topic) = env.get("APNS_TOPIC") else {
        return Ok(None);
    };
    Ok(Some(ApnsConfig {
        team_id: env.required("APNS_TEAM_ID")?,
        key_id: env.required("APNS_KEY_ID")?,
        key_pem: key_file(env, "APNS_KEY_FILE")?,
        topic,
        sandbox_url: env
            .get("APNS_SANDBOX_URL")
            .unwrap_or_else(|| "https://api.sandbox.push.apple.com".into()),
        production_url: env
            .get("APNS_PRODUCTION_URL")
            .unwrap_or_else(|| "https://api.push.apple.com".into()),
        extra_root_pem: ca_file(env, "APNS_CA_FILE")?,
    }))
}

fn web_push(env: &Env<'_>) -> Result<Option<WebPushConfig>, ConfigError> {
    let Some(subject) = env.get("WEB_PUSH_SUBJECT") else {
        return Ok(None);
    };
    let key_pem = key_file(env, "WEB_PUSH_VAPID_KEY_FILE")?;
    notify::webpush::application_server_key(&key_pem).map_err(ConfigError::VapidKey)?;
    Ok(Some(WebPushConfig {
        key_pem,
        subject,
        extra_root_pem: ca_file(env, "WEB_PUSH_CA_FILE")?,
    }))
}

impl FromEnv for Config {
    type Error = ConfigError;

    fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let env = Env::new(&lookup);
        env.requiring(Flag::NotificationDispatch, "notification delivery is off")?;
        let apns = apns(&env)?;
        let web_push = web_push(&env)?;
        if apns.is_none() && web_push.is_none() {
            return Err(ConfigError::NoProvider);
        }
        Ok(Config {
            database: store::Database::from_env(&env, 4)?,
            apns,
            web_push,
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
    let providers = Providers {
        apns: config
            .apns
            .map(Apns::new)
            .transpose()
            .context("configure the APNs client")?,
        web_push: config
            .web_push
            .map(WebPush::new)
            .transpose()
            .context("configure the Web Push client (WEB_PUSH_VAPID_KEY_FILE, WEB_PUSH_SUBJECT)")?,
    };
    let dispatcher = Dispatcher {
        store,
        providers,
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

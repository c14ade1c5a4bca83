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
//! | `NOTIFY_WORKER_ID` | this process's name in claims | `notify-<pid>` |
//! | `NOTIFY_LEASE_SECONDS` | claim length; a crashed notifier's claims expire after it | `30` |
//! | `NOTIFY_POLL_MILLISECONDS` | how often due notifications are looked for | `1000` |
//! | `LOG_LEVEL` | as for the other roles | `info` |

use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use domain::flags::{FeatureFlags, Flag};
use notify::apns::{Apns, ApnsConfig};
use notify::dispatch::Dispatcher;
use store::Store;

struct Config {
    database_url: String,
    apns: ApnsConfig,
    worker: String,
    lease_seconds: u32,
    poll: Duration,
    log_level: tracing::Level,
}

fn config() -> Result<Config, String> {
    let get = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
    let required = |name: &'static str| get(name).ok_or(format!("{name} is required"));
    let flags = FeatureFlags::from_env(|name| std::env::var(name).ok()).map_err(|error| error.to_string())?;
    if !flags.is_on(Flag::NotificationDispatch) {
        return Err("AGENT_NOTIFICATION_DISPATCH_ENABLED is not 1: notification delivery is off".into());
    }
    let number = |name: &'static str, default: u32| {
        role::positive(get(name).as_deref(), default).map_err(|reason| format!("{name} is invalid: {reason}"))
    };
    let key_path = required("APNS_KEY_FILE")?;
    let key_pem = hardening::secret_file::read_owner_only(Path::new(&key_path))
        .map_err(|error| format!("APNS_KEY_FILE: {error}"))?;
    let extra_root_pem = match get("APNS_CA_FILE") {
        None => None,
        Some(path) => Some(std::fs::read(&path).map_err(|error| format!("APNS_CA_FILE: {path}: {error}"))?),
    };
    Ok(Config {
        database_url: required("DATABASE_URL")?,
        apns: ApnsConfig {
            team_id: required("APNS_TEAM_ID")?,
            key_id: required("APNS_KEY_ID")?,
            key_pem,
            topic: required("APNS_TOPIC")?,
            sandbox_url: get("APNS_SANDBOX_URL").unwrap_or_else(|| "https://api.sandbox.push.apple.com".into()),
            production_url: get("APNS_PRODUCTION_URL").unwrap_or_else(|| "https://api.push.apple.com".into()),
            extra_root_pem,
        },
        worker: get("NOTIFY_WORKER_ID").unwrap_or_else(|| format!("notify-{}", std::process::id())),
        lease_seconds: number("NOTIFY_LEASE_SECONDS", 30)?,
        poll: Duration::from_millis(u64::from(number("NOTIFY_POLL_MILLISECONDS", 1000)?)),
        log_level: role::log_level(get("LOG_LEVEL").as_deref())
            .map_err(|reason| format!("LOG_LEVEL is invalid: {reason}"))?,
    })
}

fn main() -> ExitCode {
    let config = match role::prepare("steward-notify", role::RoleKind::Application, config) {
        Ok(config) => config,
        Err(code) => return code,
    };
    role::run(config.log_level, deliver(config))
}

async fn deliver(config: Config) -> anyhow::Result<()> {
    let store = Store::connect_lazy(&config.database_url, 4).context("configure the database pool")?;
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

//! The call-ingress listener: the one public route `/webhooks/callprov` (reached through the
//! reverse proxy), served on loopback. It holds only the webhook signing secret and a database
//! login that can write receipts and nothing else.
//!
//! A delivery is accepted only when `X-Webhook-Signature` is the 64-character lowercase hex
//! HMAC-SHA256 of the exact raw body under the signing secret; there is no unsigned fallback
//! and no second convention. The body must be a JSON object whose `call_id` is the provider's
//! call id; only that id is queued, nothing else of the body is kept or logged.
//!
//! | Variable | Meaning | Default |
//! |---|---|---|
//! | `DATABASE_URL` | PostgreSQL URL of the ingress login | required |
//! | `AGENT_CALL_INGRESS_ENABLED` | must be `1`: the listener exists only with its flag | required |
//! | `AGENT_CALL_ENABLED` | must be `1`: ingress requires calling | required |
//! | `CALLPROV_WEBHOOK_SECRET_FILE` | the signing secret, owner-only, at least 16 bytes | required |
//! | `CALL_INGRESS_LISTEN_ADDR` | a loopback socket address | `127.0.0.1:8003` |
//! | `CALL_INGRESS_HEADER_TIMEOUT_SECONDS`, `CALL_INGRESS_STALL_TIMEOUT_SECONDS`, `CALL_INGRESS_MAX_CONNECTIONS` | the listener's limits (`listener::Limits`) | `10`, `30`, `1024` |
//! | `LOG_LEVEL` | as for the other roles | `info` |
//!
//! It refuses to start with a model key, the browser control-plane credential, the owner's
//! bearer, scopes, or any call-provider API key in its environment.

use std::net::SocketAddr;
use std::path::Path;
use std::process::ExitCode;

use anyhow::Context;
use domain::env::{Env, EnvError, FromEnv, invalid};
use hardening::secret_file::SecretFileError;

/// The shortest signing secret accepted.
const MIN_SECRET_BYTES: usize = 16;
const DEFAULT_LISTEN_ADDR: &str = "127.0.0.1:8003";

#[derive(Debug, thiserror::Error)]
enum ConfigError {
    #[error("{0}")]
    Env(#[from] EnvError),
    #[error("AGENT_CALL_INGRESS_ENABLED is not 1: the ingress listener is off")]
    Off,
    #[error(
        "CALL_INGRESS_LISTEN_ADDR `{0}` is not a loopback address; the reverse proxy forwards /webhooks/callprov to loopback"
    )]
    NotLoopback(SocketAddr),
    #[error("CALLPROV_WEBHOOK_SECRET_FILE: {0}")]
    SecretFile(#[from] SecretFileError),
    #[error("CALLPROV_WEBHOOK_SECRET_FILE: the secret must be at least {MIN_SECRET_BYTES} bytes")]
    SecretTooShort,
    #[error(
        "AGENT_CALL_INGRESS_ENABLED requires AGENT_CALL_ENABLED=1: without calling, no receipt would ever be settled"
    )]
    WithoutCalling,
}

struct Config {
    database: store::Database,
    listen: SocketAddr,
    limits: listener::Limits,
    secret: Vec<u8>,
}

impl FromEnv for Config {
    type Error = ConfigError;

    fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let env = Env::new(&lookup);
        if !env.switch("AGENT_CALL_INGRESS_ENABLED")? {
            return Err(ConfigError::Off);
        }
        let database = store::Database::from_env(&env, 4)?;
        let listen_text = env
            .get("CALL_INGRESS_LISTEN_ADDR")
            .unwrap_or_else(|| DEFAULT_LISTEN_ADDR.into());
        let listen: SocketAddr = listen_text.parse().map_err(|_| {
            invalid(
                "CALL_INGRESS_LISTEN_ADDR",
                format!("`{listen_text}` is not a socket address"),
            )
        })?;
        if !listen.ip().is_loopback() {
            return Err(ConfigError::NotLoopback(listen));
        }
        let secret_path = env.required("CALLPROV_WEBHOOK_SECRET_FILE")?;
        let mut secret = hardening::secret_file::read_owner_only(Path::new(&secret_path))?;
        while secret.last().is_some_and(|byte| *byte == b'\n' || *byte == b'\r') {
            secret.pop();
        }
        if secret.len() < MIN_SECRET_BYTES {
            return Err(ConfigError::SecretTooShort);
        }
        // The spec's flag table: ingress requires calling. Receipts are for the call worker to
        // settle; without calling nothing ever would, so the listener does not start.
        if !env.switch("AGENT_CALL_ENABLED")? {
            return Err(ConfigError::WithoutCalling);
        }
        Ok(Config {
            database,
            listen,
            limits: listener::Limits::from_env(&env, listener::Prefix::CallIngress, hardening::process::open_files())?,
            secret,
        })
    }
}

fn main() -> ExitCode {
    role::main("steward-call-ingress", role::RoleKind::CallIngress, serve)
}

async fn serve(config: Config) -> anyhow::Result<()> {
    let store = config.database.connect_lazy();
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .with_context(|| format!("listen on {}", config.listen))?;
    let app = steward_call_ingress::app(store, config.secret);
    tracing::info!(addr = %listener.local_addr()?, "steward-call-ingress listening");
    role::ready();
    listener::serve(listener, app, config.limits, role::shutdown_signal())
        .await
        .context("serve http")
}

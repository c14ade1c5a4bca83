//! The API role's configuration, parsed once from its environment into typed values.
//!
//! | Variable | Meaning | Default |
//! |---|---|---|
//! | `DATABASE_URL` | PostgreSQL URL of the api login | required |
//! | `DATABASE_MAX_CONNECTIONS` | pool size | `10` |
//! | `API_LISTEN_ADDR` | socket address to listen on | `127.0.0.1:8080` |
//! | `API_TOKEN_FILE` | owner-only file holding the static bearer token (≥ 32 bytes) | required |
//! | `AUTH_SCOPES` | comma-separated scopes granted to the token | empty |
//! | `AGENT_DEFINITIONS_FILE` | JSON array of agent definitions | the built-in `default` agent |
//! | `API_MAX_ARTIFACT_BYTES` | largest artifact upload | `26214400` (25 MiB) |
//! | `API_UPLOAD_IDLE_SECONDS` | an upload sending nothing this long is refused (408) | `30` |
//! | `AGENT_*_ENABLED`, `AGENT_EMAIL_JUNK_FILTER_MODE` | feature flags | all off |
//! | `RUN_MAX_STEPS`, `RUN_MAX_MODEL_CALLS`, `RUN_MAX_TOOL_CALLS` | per-run caps of interactive runs | `16` each |
//! | `RUN_MAX_COST` | per-run cost cap, a decimal | `1` |
//! | `RUN_TIMEOUT_SECONDS` | per-run deadline | `300` |
//! | `MODEL_SETTINGS_FILE` | JSON `{"chat": [{"model", "reasoning_efforts"}], "memory": [...]}`: the offered models | the scripted model |
//! | `API_WEB_SESSION_DAYS` | how long a web client's session lasts from its exchange, 1 to 400 | `30` |
//! | `API_STREAM_HEARTBEAT_SECONDS` | heartbeat comment interval of event streams, 1 to 15 | `15` |
//! | `API_WEB_ORIGIN` | the origin the owner opens the web client at, `https://host[:port]`: its session cookie is `Secure` and `__Host-`, answers carry HSTS; unset, web sessions are made only for a page on loopback over plain HTTP | unset |
//! | `AGENT_EMAIL_ENABLED` with `MAIL_ACCOUNTS_FILE` (or the three `MAIL_*_CREDENTIAL_FILE`) | mail: the accounts' ids shape the rosters; no credential is opened here | off |
//! | `SITE_URL`, `DOCS_URL` | the public site's and the documentation's addresses; served under their paths | served at `/site/` and `/docs/` |
//! | `SITE_NAME`, `SITE_OPERATOR`, `SITE_CONTACT` | the public pages' deployment name, operator and contact | `Steward`, `its owner`, `the operator of this deployment` |
//! | `SITE_TEMPLATES_DIR` | the operator's page templates (`site/README.md`) | the built-in pages |
//! | `LOG_LEVEL` | `error`, `warn`, `info`, `debug` or `trace` | `info` |

use std::net::SocketAddr;
use std::path::PathBuf;

use domain::agent::{AgentDefinition, AgentError, AgentRegistry};
use domain::cursor::CursorCodec;
use domain::env::{Env, EnvError, FromEnv, invalid};
use domain::flags::FeatureFlags;
use domain::ids::PrincipalId;
use domain::mail_environment::{MailEnvironment, MailEnvironmentError};
use domain::manifest::AccountIds;
use domain::run::{Cost, RunLimits};
use domain::scope::{ScopeError, ScopeSet};
use hardening::secret_file::{SecretFileError, read_owner_only};
use hmac::{Hmac, Mac};
use sha2::Sha256;

use crate::auth::Authenticator;

pub const DEFAULT_LISTEN_ADDR: &str = "127.0.0.1:8080";
pub const DEFAULT_ARTIFACT_MAX_BYTES: u64 = 25 * 1024 * 1024;
pub const MIN_TOKEN_BYTES: usize = 32;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{0}")]
    Env(#[from] EnvError),
    #[error("API_TOKEN_FILE: {0}")]
    TokenFile(#[from] SecretFileError),
    #[error("API_TOKEN_FILE: the token must be at least {MIN_TOKEN_BYTES} bytes")]
    TokenTooShort,
    #[error("API_TOKEN_FILE: the token must be printable ASCII without spaces")]
    TokenCharacters,
    #[error("{0}")]
    Scopes(#[from] ScopeError),
    #[error("AGENT_DEFINITIONS_FILE: {0}")]
    Agents(String),
    #[error("{0}")]
    Browser(#[from] browser_control::ControlPlaneError),
    #[error("{0}")]
    MailEnvironment(#[from] MailEnvironmentError),
    #[error("MAIL_ACCOUNTS_FILE {path}: {reason}")]
    MailAccounts { path: String, reason: String },
}

impl From<AgentError> for ConfigError {
    fn from(error: AgentError) -> Self {
        ConfigError::Agents(error.to_string())
    }
}

/// Everything the API role needs, validated.
#[derive(Debug)]
pub struct ApiConfig {
    pub listen_addr: SocketAddr,
    /// What a connection may hold: the header and stall timeouts, the connection cap.
    pub listener: listener::Limits,
    pub database: store::Database,
    pub authenticator: Authenticator,
    pub cursors: CursorCodec,
    pub flags: FeatureFlags,
    pub agents: AgentRegistry,
    pub artifact_max_bytes: u64,
    pub upload_idle_timeout: std::time::Duration,
    /// The release identity `/health/ready` and `release.txt` report: `steward-api` sets the
    /// build's (`release::IDENTITY`); read from the environment it is the bare version.
    pub release: String,
    /// Limits given to every interactive run.
    pub run_limits: RunLimits,
    pub stream_heartbeat: std::time::Duration,
    /// The model combinations offered in the settings.
    pub offered_models: domain::models::Offered,
    /// The connected mail accounts' ids, when mail is on (Review & Send names their send tools).
    pub mail_accounts: Option<AccountIds>,
    /// The browser role, with `AGENT_BROWSER_ENABLED=1`.
    pub browser: Option<crate::browser_access::BrowserAccess>,
    /// The public site (`SITE_URL`, `DOCS_URL`, its templates).
    pub site: crate::site::SiteSettings,
    /// The VAPID public key web clients subscribe with (`WEB_PUSH_PUBLIC_KEY`); without it
    /// `GET /v1/devices/web-push` answers 404 `web_push_unavailable`.
    pub web_push_public_key: Option<String>,
}

/// A VAPID public key as browsers take it: an uncompressed P-256 point (65 bytes, `0x04`
/// first), base64url without padding. The notify role holds the private key; preflight checks
/// the two belong together.
pub fn web_push_public_key(text: &str) -> Result<String, EnvError> {
    use base64::Engine as _;
    let bytes = base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(text.trim())
        .map_err(|_| invalid("WEB_PUSH_PUBLIC_KEY", "is not base64url without padding"))?;
    if bytes.len() != 65 || bytes[0] != 4 {
        return Err(invalid(
            "WEB_PUSH_PUBLIC_KEY",
            "is not an uncompressed P-256 public key (65 bytes, 0x04 first); `steward-preflight` prints the one the notify role's key has",
        ));
    }
    Ok(text.trim().to_owned())
}

impl FromEnv for ApiConfig {
    type Error = ConfigError;

    /// Parses and checks the environment given by `lookup`, reading the token file (after its
    /// ownership and mode checks) and the optional agent definitions file.
    fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Result<ApiConfig, ConfigError> {
        let env = Env::new(&lookup);
        let database = store::Database::from_env(&env, 10)?;
        let listen_addr = env
            .get("API_LISTEN_ADDR")
            .unwrap_or_else(|| DEFAULT_LISTEN_ADDR.to_owned());
        let listen_addr = listen_addr
            .parse()
            .map_err(|_| invalid("API_LISTEN_ADDR", format!("`{listen_addr}` is not ip:port")))?;
        let artifact_max_bytes = env.parsed("API_MAX_ARTIFACT_BYTES", DEFAULT_ARTIFACT_MAX_BYTES)?;

        let upload_idle_seconds = env.positive("API_UPLOAD_IDLE_SECONDS", 30)?;
        let web_session_days = env.positive("API_WEB_SESSION_DAYS", 30)?;
        if web_session_days > 400 {
            return Err(invalid(
                "API_WEB_SESSION_DAYS",
                format!("{web_session_days} is over 400 days (browsers cap a cookie's life there)"),
            )
            .into());
        }

        // The release identity is the build's (`release::IDENTITY`, which `steward-api` sets);
        // a variable that once named it would be silently ignored, so it is refused.
        if env.get("AGENT_RELEASE").is_some() {
            return Err(invalid(
                "AGENT_RELEASE",
                "is no longer read: the release identity comes from the build (`steward-api --version`); remove it",
            )
            .into());
        }
        let release = env!("CARGO_PKG_VERSION").to_owned();
        let site = crate::site::SiteSettings::from_env(&env)?;

        let defaults = RunLimits::default();
        let run_limits = RunLimits {
            max_steps: env.positive("RUN_MAX_STEPS", defaults.max_steps)?,
            max_model_calls: env.positive("RUN_MAX_MODEL_CALLS", defaults.max_model_calls)?,
            max_tool_calls: env.positive("RUN_MAX_TOOL_CALLS", defaults.max_tool_calls)?,
            max_cost: match env.get("RUN_MAX_COST") {
                None => defaults.max_cost,
                Some(text) => Cost::parse(&text).map_err(|error| invalid("RUN_MAX_COST", error.to_string()))?,
            },
            run_timeout_seconds: env.positive("RUN_TIMEOUT_SECONDS", defaults.run_timeout_seconds)?,
        };

        let heartbeat = env.parsed("API_STREAM_HEARTBEAT_SECONDS", 15u64)?;
        if !(1..=15).contains(&heartbeat) {
            return Err(invalid("API_STREAM_HEARTBEAT_SECONDS", "must be between 1 and 15").into());
        }

        let web_origin = crate::auth::WebOrigin::parse(env.get("API_WEB_ORIGIN").as_deref())
            .map_err(|reason| invalid("API_WEB_ORIGIN", reason))?;
        let token_path = PathBuf::from(env.required("API_TOKEN_FILE")?);
        let token = read_owner_only(&token_path)?;
        let token = token.strip_suffix(b"\n").unwrap_or(&token);
        let token = token.strip_suffix(b"\r").unwrap_or(token);
        if token.len() < MIN_TOKEN_BYTES {
            return Err(ConfigError::TokenTooShort);
        }
        if !token.iter().all(|byte| (0x21..=0x7e).contains(byte)) {
            return Err(ConfigError::TokenCharacters);
        }
        let scopes = ScopeSet::parse(&lookup("AUTH_SCOPES").unwrap_or_default())?;
        let flags = env.flags()?;

        let definitions = match env.get("AGENT_DEFINITIONS_FILE") {
            None => vec![AgentDefinition::builtin_default()],
            Some(path) => {
                let text = std::fs::read(&path).map_err(|error| ConfigError::Agents(format!("{path}: {error}")))?;
                serde_json::from_slice(&text).map_err(|error| ConfigError::Agents(format!("{path}: {error}")))?
            }
        };
        let mail = mail_accounts(&lookup)?;
        let browser = if flags.is_on(domain::flags::Flag::Browser) {
            Some(crate::browser_access::BrowserAccess::from_env(&env)?)
        } else {
            None
        };
        let agents = AgentRegistry::compose(definitions, &flags, mail.as_ref())?;

        let offered_models = match env.get("MODEL_SETTINGS_FILE") {
            // Without an operator offer, the default agent's own model is the only choice.
            None => {
                let agent = agents.get("default").or_else(|| agents.iter().next());
                let model = agent.map(|agent| &agent.configuration.model);
                domain::models::Offered::only(
                    model.map_or("scripted-1", |m| m.model.as_str()),
                    model.and_then(|m| m.reasoning_effort.as_deref()),
                )
            }
            Some(path) => {
                let invalid = |reason: String| invalid("MODEL_SETTINGS_FILE", reason);
                let bytes = std::fs::read(&path).map_err(|error| invalid(format!("{path}: {error}")))?;
                let offered: domain::models::Offered =
                    serde_json::from_slice(&bytes).map_err(|error| invalid(format!("{path}: {error}")))?;
                offered.check().map_err(|error| invalid(error.to_string()))?;
                offered
            }
        };

        Ok(ApiConfig {
            listen_addr,
            listener: listener::Limits::from_env(&env, listener::Prefix::Api, hardening::process::open_files())?,
            database,
            cursors: CursorCodec::new(derive_key(token, b"steward/cursor/v1")),
            authenticator: Authenticator::new(
                token,
                scopes,
                PrincipalId::owner(),
                derive_key(token, b"steward/web-session/v1"),
                std::time::Duration::from_secs(u64::from(web_session_days) * 86_400),
                web_origin,
            ),
            flags,
            agents,
            artifact_max_bytes,
            upload_idle_timeout: std::time::Duration::from_secs(u64::from(upload_idle_seconds)),
            release,
            run_limits,
            stream_heartbeat: std::time::Duration::from_secs(heartbeat),
            offered_models,
            mail_accounts: mail,
            browser,
            site,
            web_push_public_key: env
                .get("WEB_PUSH_PUBLIC_KEY")
                .map(|key| web_push_public_key(&key))
                .transpose()?,
        })
    }
}

/// The connected mail accounts' ids, for the agents' rosters: the API reads the manifest's ids
/// only and never opens a credential document (the worker does, with the credentials it uses).
/// A partial or contradictory mail configuration stops the role.
fn mail_accounts(lookup: impl Fn(&str) -> Option<String>) -> Result<Option<AccountIds>, ConfigError> {
    match MailEnvironment::parse(lookup)? {
        MailEnvironment::Off => Ok(None),
        MailEnvironment::Legacy(_) => Ok(Some(AccountIds::legacy())),
        MailEnvironment::Manifest(path) => {
            let refuse = |reason: String| ConfigError::MailAccounts {
                path: path.clone(),
                reason,
            };
            let bytes = hardening::config_file::read_protected(std::path::Path::new(&path))
                .map_err(|error| refuse(error.to_string()))?;
            AccountIds::parse(&bytes)
                .map(Some)
                .map_err(|error| refuse(error.to_string()))
        }
    }
}

/// A purpose-bound key derived from the token, so cursors are unforgeable without another secret
/// and become invalid when the token is rotated.
fn derive_key(token: &[u8], purpose: &[u8]) -> [u8; 32] {
    let mut mac = Hmac::<Sha256>::new_from_slice(token).expect("hmac accepts any key length");
    mac.update(purpose);
    mac.finalize().into_bytes().into()
}

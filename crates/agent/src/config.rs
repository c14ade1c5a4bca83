//! The worker role's configuration, from its environment.
//!
//! | Variable | Meaning | Default |
//! |---|---|---|
//! | `DATABASE_URL` | PostgreSQL URL of the worker login | required |
//! | `DATABASE_MAX_CONNECTIONS` | pool size | `10` |
//! | `WORKER_ID` | this process's name in leases | `worker-<pid>-<random>` |
//! | `WORKER_CONCURRENCY` | runs executed at once | `4` |
//! | `WORKER_LEASE_SECONDS` | lease length; a dead worker's run resumes after it | `30` |
//! | `OPENAI_BASE_URL` | base URL of an OpenAI-compatible API (enables provider `openai`) | unset |
//! | `OPENAI_API_KEY_FILE` | owner-only file holding that API's key | unset |
//! | `AGENT_EMAIL_ENABLED` | `1` composes the mail tools of the connected accounts | `0` |
//! | `MAIL_ACCOUNTS_FILE` | the accounts manifest (or the legacy `MAIL_READ_CREDENTIAL_FILE`, `MAIL_WRITE_CREDENTIAL_FILE`, `MAIL_SEND_CREDENTIAL_FILE`) | unset |
//! | `MAIL_API_BASE_URL` | the mail provider's REST API (https; plain http only to a loopback address) | `https://gmail.googleapis.com` |
//! | `MAIL_OAUTH_TOKEN_URL` | the provider's OAuth token endpoint (the same rule) | `https://oauth2.googleapis.com/token` |
//! | `MAIL_RECONCILE_ATTEMPTS` | searches for an uncertain write or send before it settles `not_found` | `6` |
//! | `MAIL_RECONCILE_SPACING_SECONDS` | the n-th search waits n × this long after the previous | `30` |
//! | `LOG_LEVEL` | `error`, `warn`, `info`, `debug`, `trace` | `info` |
//!
//! With mail on, every credential document is checked and parsed before the role serves: a
//! missing, shared, symlinked, mis-scoped or mis-tagged document stops it (fail closed).

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{0} is required")]
    Missing(&'static str),
    #[error("{variable} is invalid: {reason}")]
    Invalid { variable: &'static str, reason: String },
    #[error("{0}")]
    Endpoint(#[from] model_client::endpoint::EndpointError),
    #[error("{0}")]
    Mail(#[from] mail_mcp::accounts::AccountsError),
}

pub use model_client::endpoint::OpenAiEndpoint;

/// How uncertain mail writes and sends are looked for: the first search at once, the n-th
/// `n × spacing_seconds` after the one before; after `attempts` searches without finding the
/// message it settles `not_found` (which proves nothing; the action is never repeated).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ReconcilePolicy {
    pub attempts: u32,
    pub spacing_seconds: u32,
}

#[derive(Clone, Debug)]
pub struct WorkerConfig {
    pub database_url: String,
    pub database_max_connections: u32,
    pub worker_id: String,
    pub concurrency: usize,
    pub lease_seconds: u32,
    pub openai: Option<OpenAiEndpoint>,
    /// The connected mail accounts (credentials loaded), when mail is on.
    pub mail: Option<mail_mcp::accounts::MailAccounts>,
    pub mail_endpoints: mail_mcp::gmail::Endpoints,
    pub reconcile: ReconcilePolicy,
    pub log_level: tracing::Level,
}

fn positive(variable: &'static str, value: Option<String>, default: u32) -> Result<u32, ConfigError> {
    role::positive(value.as_deref(), default).map_err(|reason| ConfigError::Invalid { variable, reason })
}

impl WorkerConfig {
    pub fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Result<WorkerConfig, ConfigError> {
        let get = |name: &str| lookup(name).filter(|value| !value.is_empty());
        let database_url = get("DATABASE_URL").ok_or(ConfigError::Missing("DATABASE_URL"))?;
        database_url
            .parse::<sqlx::postgres::PgConnectOptions>()
            .map_err(|error| ConfigError::Invalid {
                variable: "DATABASE_URL",
                reason: error.to_string(),
            })?;
        let openai = model_client::endpoint::openai_from_env(get)?;
        let mail = mail_mcp::accounts::MailAccounts::from_env(&lookup)?;
        let mail_endpoints =
            mail_mcp::gmail::Endpoints::from_env(get).map_err(|(variable, reason)| ConfigError::Invalid {
                variable,
                reason: reason.into(),
            })?;
        let log_level = role::log_level(get("LOG_LEVEL").as_deref()).map_err(|reason| ConfigError::Invalid {
            variable: "LOG_LEVEL",
            reason,
        })?;
        Ok(WorkerConfig {
            database_url,
            database_max_connections: positive("DATABASE_MAX_CONNECTIONS", get("DATABASE_MAX_CONNECTIONS"), 10)?,
            worker_id: get("WORKER_ID").unwrap_or_else(|| {
                format!(
                    "worker-{}-{}",
                    std::process::id(),
                    &uuid::Uuid::new_v4().simple().to_string()[..8]
                )
            }),
            concurrency: positive("WORKER_CONCURRENCY", get("WORKER_CONCURRENCY"), 4)? as usize,
            lease_seconds: positive("WORKER_LEASE_SECONDS", get("WORKER_LEASE_SECONDS"), 30)?,
            openai,
            mail,
            mail_endpoints,
            reconcile: ReconcilePolicy {
                attempts: positive("MAIL_RECONCILE_ATTEMPTS", get("MAIL_RECONCILE_ATTEMPTS"), 6)?,
                spacing_seconds: match get("MAIL_RECONCILE_SPACING_SECONDS") {
                    None => 30,
                    Some(text) => text.trim().parse().map_err(|_| ConfigError::Invalid {
                        variable: "MAIL_RECONCILE_SPACING_SECONDS",
                        reason: "must be a whole number of seconds".into(),
                    })?,
                },
            },
            log_level,
        })
    }
}

//! The worker role's configuration, from its environment (documented in
//! `docs/configuration/worker.md`).
//!
//! With mail on, every credential document is checked and parsed before the role serves: a
//! missing, shared, symlinked, mis-scoped or mis-tagged document stops it (fail closed).

use agent::worker::{ReconcilePolicy, Settings};
use domain::env::{Env, EnvError, FromEnv};
use domain::flags::Flag;
use mail_mcp::accounts::{AccountsError, MailAccounts};
use model_client::endpoint::{EndpointError, OpenAiEndpoint};

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("{0}")]
    Env(#[from] EnvError),
    #[error("{0}")]
    Endpoint(#[from] EndpointError),
    #[error("{0}")]
    Mail(#[from] AccountsError),
    #[error("AGENT_EMAIL_MODE_ENABLED=1 needs the mail accounts (AGENT_EMAIL_ENABLED=1)")]
    EmailModeWithoutMail,
    #[error("unsubscribe assistance: {0}")]
    Dns(#[from] email::dns::DnsSetupError),
    #[error("CALLPROV_CONFIGURATION_FILE: the call configuration file {0}")]
    CallFile(#[from] hardening::config_file::ConfigFileError),
    #[error("CALLPROV_CONFIGURATION_FILE: {0}")]
    CallConfiguration(#[from] domain::call::ConfigError),
    #[error("{0}")]
    Browser(#[from] browser_control::ControlPlaneError),
}

#[derive(Clone, Debug)]
pub struct WorkerConfig {
    pub database: store::Database,
    pub settings: Settings,
    pub openai: Option<OpenAiEndpoint>,
    /// The connected mail accounts (credentials loaded), when mail is on.
    pub mail: Option<MailAccounts>,
    pub mail_endpoints: mail_mcp::gmail::Endpoints,
    /// Email mode is on: this worker also runs its provider writes.
    pub email_mode: bool,
    /// Unsubscribe assistance is on: the one-click transport this worker owns.
    pub unsubscribe: Option<email::oneclick::OneClickTransport>,
    /// Calling is on: the call configuration file (never the provider key).
    pub calls: Option<agent::call_tools::CallTools>,
    /// The hosted browser is on: the browser role's control plane (`browser.act`).
    pub browser: Option<agent::browser_tools::BrowserTools>,
    /// Memory is on (`AGENT_MEMORY_API_ENABLED`): runs recall beliefs and finished ones form
    /// them.
    pub memory: bool,
}

/// The one-click transport: public HTTPS on port 443; or, for the offline demo only, the demo's
/// local endpoint (`EMAIL_UNSUBSCRIBE_LOCAL_ENDPOINT`, a loopback `IP:port`, trusting only the
/// authority in `EMAIL_UNSUBSCRIBE_LOCAL_CA_FILE`), which every one-click request then goes to.
fn one_click_transport(env: &Env<'_>) -> Result<email::oneclick::OneClickTransport, ConfigError> {
    use email::oneclick::{OneClickTransport, Settings};
    let resolver = email::dns::Resolver::from_env(|name| env.get(name))?;
    let Some(endpoint) = env.get("EMAIL_UNSUBSCRIBE_LOCAL_ENDPOINT") else {
        return Ok(OneClickTransport::public(resolver));
    };
    let endpoint: std::net::SocketAddr = endpoint
        .trim()
        .parse()
        .ok()
        .filter(|endpoint: &std::net::SocketAddr| endpoint.ip().is_loopback())
        .ok_or_else(|| {
            domain::env::invalid(
                "EMAIL_UNSUBSCRIBE_LOCAL_ENDPOINT",
                "not a loopback IP address and port (it is for the offline demo only)",
            )
        })?;
    let ca_file = env.required("EMAIL_UNSUBSCRIBE_LOCAL_CA_FILE")?;
    let root = std::fs::read(&ca_file)
        .ok()
        .and_then(|pem| reqwest::Certificate::from_pem(&pem).ok())
        .ok_or_else(|| domain::env::invalid("EMAIL_UNSUBSCRIBE_LOCAL_CA_FILE", "not a readable PEM certificate"))?;
    Ok(OneClickTransport::new(Settings {
        resolver,
        port: endpoint.port(),
        also_allowed: vec![endpoint.ip()],
        roots: Some(vec![root]),
        timeout: email::oneclick::TIMEOUT,
        connect_timeout: email::oneclick::CONNECT_TIMEOUT,
    }))
}

impl FromEnv for WorkerConfig {
    type Error = ConfigError;

    fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Result<WorkerConfig, ConfigError> {
        let env = Env::new(&lookup);
        let database = store::Database::from_env(&env, 10)?;
        let flags = env.flags()?;
        let openai = model_client::endpoint::openai_from_env(|name| env.get(name))?;
        let mail = MailAccounts::from_env(env.lookup())?;
        let email_mode = flags.is_on(Flag::EmailMode);
        if email_mode && mail.is_none() {
            return Err(ConfigError::EmailModeWithoutMail);
        }
        let unsubscribe = if flags.is_on(Flag::EmailUnsubscribe) {
            Some(one_click_transport(&env)?)
        } else {
            None
        };
        // Calling: the configuration file pins approvals to its revision; it is checked now and
        // read again at each use. The provider key stays with the call worker.
        let calls = if flags.is_on(Flag::Call) {
            let path = std::path::PathBuf::from(env.required("CALLPROV_CONFIGURATION_FILE")?);
            domain::call::CallConfiguration::parse(&hardening::config_file::read_protected(&path)?)?;
            Some(agent::call_tools::CallTools { configuration: path })
        } else {
            None
        };
        // The hosted browser: `BROWSER_CONTROL_URL` and its credential, checked now.
        let browser = if flags.is_on(Flag::Browser) {
            Some(agent::browser_tools::BrowserTools::from_env(&env)?)
        } else {
            None
        };
        let mail_endpoints = mail_mcp::gmail::Endpoints::from_env(|name| env.get(name))
            .map_err(|(variable, reason)| domain::env::invalid(variable, reason))?;
        let settings = Settings {
            worker_id: env.get("WORKER_ID").unwrap_or_else(|| role::instance_id("worker")),
            concurrency: env.positive("WORKER_CONCURRENCY", 4)? as usize,
            lease_seconds: env.positive("WORKER_LEASE_SECONDS", 30)?,
            reconcile: ReconcilePolicy {
                attempts: env.positive("MAIL_RECONCILE_ATTEMPTS", 6)?,
                spacing_seconds: env.parsed("MAIL_RECONCILE_SPACING_SECONDS", 30)?,
            },
        };
        Ok(WorkerConfig {
            database,
            settings,
            openai,
            mail,
            mail_endpoints,
            email_mode,
            unsubscribe,
            calls,
            browser,
            memory: flags.is_on(Flag::MemoryApi),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn config(pairs: &[(&str, &str)]) -> Result<WorkerConfig, ConfigError> {
        let map: HashMap<&str, &str> = pairs.iter().copied().collect();
        WorkerConfig::from_env(|name| map.get(name).map(|value| (*value).to_owned()))
    }

    #[test]
    fn defaults_and_typed_refusals() {
        let url = ("DATABASE_URL", "postgres://worker@localhost/steward");
        let config = config(&[url]).expect("defaults");
        assert_eq!((config.settings.concurrency, config.settings.lease_seconds), (4, 30));
        assert_eq!(
            config.settings.reconcile,
            ReconcilePolicy {
                attempts: 6,
                spacing_seconds: 30
            }
        );
        assert_eq!(config.database.max_connections, 10);
        assert!(config.settings.worker_id.starts_with("worker-"));
        assert!(matches!(
            config_error(&[]),
            ConfigError::Env(EnvError::Missing("DATABASE_URL"))
        ));
        assert!(matches!(
            config_error(&[url, ("WORKER_CONCURRENCY", "0")]),
            ConfigError::Env(EnvError::Invalid {
                variable: "WORKER_CONCURRENCY",
                ..
            })
        ));
        assert!(matches!(
            config_error(&[url, ("MAIL_RECONCILE_SPACING_SECONDS", "soon")]),
            ConfigError::Env(EnvError::Invalid {
                variable: "MAIL_RECONCILE_SPACING_SECONDS",
                ..
            })
        ));
        assert!(matches!(
            config_error(&[url, ("AGENT_EMAIL_MODE_ENABLED", "1")]),
            ConfigError::EmailModeWithoutMail
        ));
    }

    fn config_error(pairs: &[(&str, &str)]) -> ConfigError {
        config(pairs).expect_err("refused")
    }
}

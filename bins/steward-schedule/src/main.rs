//! The schedule role: fires due schedules until SIGTERM or SIGINT.
//!
//! | Variable | Meaning | Default |
//! |---|---|---|
//! | `DATABASE_URL` | PostgreSQL URL of the schedule login | required |
//! | `AGENT_EMAIL_ENABLED` | `1` when mail is connected | `0` |
//! | `MAIL_ACCOUNTS_FILE` | the accounts manifest; read for account ids at each firing (blank with mail on: the legacy single `default` account) | unset |
//! | `SCHEDULE_POLL_MILLISECONDS` | the longest pause between looks for due schedules (the role also wakes when the earliest is due, and goes on at once after a full batch) | `1000` |
//! | `LOG_LEVEL` | as for the other roles | `info` |
//!
//! The manifest is read for ids only; this role never opens a credential document and refuses
//! to start with a mail credential path (`MAIL_*_CREDENTIAL_FILE`) in its environment. With mail
//! on, a manifest that is missing, a symbolic link, group- or world-writable or malformed stops
//! the role at start; one that goes bad later makes mail unavailable to the firings after it
//! (their mail-scoped schedules fail authorization) until it is fixed.

use std::process::ExitCode;
use std::time::Duration;

use anyhow::Context;
use domain::env::{Env, EnvError, FromEnv};
use domain::mail_environment::MailEnvironmentError;
use domain::manifest::AccountIds;
use store::Store;

/// Where the connected accounts' ids come from.
enum MailAccounts {
    Off,
    /// The legacy three-path form: the one `default` account (its paths never reach this role).
    Legacy,
    Manifest(std::path::PathBuf),
}

#[derive(Debug, thiserror::Error)]
enum ConfigError {
    #[error("{0}")]
    Env(#[from] EnvError),
    #[error(
        "{0} is set: the scheduler never takes a mail credential path (it reads only the account ids of MAIL_ACCOUNTS_FILE)"
    )]
    CredentialPath(&'static str),
    #[error("MAIL_ACCOUNTS_FILE is set while AGENT_EMAIL_ENABLED is off")]
    ManifestWhileOff,
    #[error("{0}")]
    MailEnvironment(#[from] MailEnvironmentError),
    #[error("{0}")]
    Manifest(String),
}

struct Config {
    database: store::Database,
    mail_accounts: MailAccounts,
    poll: Duration,
}

impl FromEnv for Config {
    type Error = ConfigError;

    fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let env = Env::new(&lookup);
        let database = store::Database::from_env(&env, 4)?;
        let email = env.switch("AGENT_EMAIL_ENABLED")?;
        if let Some(variable) = domain::mail_environment::LEGACY_VARIABLES
            .into_iter()
            .find(|variable| env.get(variable).is_some())
        {
            return Err(ConfigError::CredentialPath(variable));
        }
        let mail_accounts = match (email, env.get("MAIL_ACCOUNTS_FILE")) {
            (false, None) => MailAccounts::Off,
            (false, Some(_)) => return Err(ConfigError::ManifestWhileOff),
            (true, None) => MailAccounts::Legacy,
            (true, Some(path)) if !path.starts_with('/') => {
                return Err(MailEnvironmentError::NotAPath(domain::mail_environment::MANIFEST_VARIABLE).into());
            }
            (true, Some(path)) => {
                let mail = MailAccounts::Manifest(path.into());
                accounts(&mail).map_err(|error| ConfigError::Manifest(format!("{error:#}")))?;
                mail
            }
        };
        Ok(Config {
            database,
            mail_accounts,
            poll: Duration::from_millis(u64::from(env.positive("SCHEDULE_POLL_MILLISECONDS", 1000)?)),
        })
    }
}

fn main() -> ExitCode {
    role::main("steward-schedule", role::RoleKind::Application, fire)
}

/// The connected accounts' ids, read fresh for each firing batch.
fn accounts(mail: &MailAccounts) -> anyhow::Result<Option<AccountIds>> {
    match mail {
        MailAccounts::Off => Ok(None),
        MailAccounts::Legacy => Ok(Some(AccountIds::legacy())),
        MailAccounts::Manifest(path) => {
            let bytes = hardening::config_file::read_protected(path)
                .with_context(|| format!("MAIL_ACCOUNTS_FILE {}", path.display()))?;
            let ids = AccountIds::parse(&bytes).with_context(|| format!("MAIL_ACCOUNTS_FILE {}", path.display()))?;
            Ok(Some(ids))
        }
    }
}

/// Schedules fired per batch, between checks for shutdown.
const BATCH: u32 = 500;

/// The shortest sleep between batches: a due schedule another scheduler holds (or one that
/// became due during the batch) is retried this soon, never in a busy loop.
const MIN_PAUSE: Duration = Duration::from_millis(5);

/// How long to sleep: until the earliest schedule is due, at least [`MIN_PAUSE`] and at most
/// `poll`.
async fn until_due(store: &Store, poll: Duration) -> Duration {
    match store.next_due().await {
        Ok(Some(next)) => {
            let wait = jiff::Timestamp::now().duration_until(next);
            Duration::try_from(wait)
                .unwrap_or(Duration::ZERO)
                .clamp(MIN_PAUSE, poll.max(MIN_PAUSE))
        }
        Ok(None) => poll,
        Err(error) => {
            tracing::warn!(%error, "cannot read when the next schedule is due");
            poll
        }
    }
}

async fn fire(config: Config) -> anyhow::Result<()> {
    let store = config.database.connect_lazy();
    let shutdown = role::shutdown_signal();
    tokio::pin!(shutdown);
    tracing::info!("steward-schedule started");
    role::ready();
    loop {
        // An unreadable manifest means mail is unavailable: schedules without mail scopes still
        // fire, and mail-scoped ones fail their authorization.
        let accounts = accounts(&config.mail_accounts).unwrap_or_else(|error| {
            tracing::warn!("{error:#}; mail scopes cannot be granted");
            None
        });
        // A full batch may have more due behind it: go on at once. Otherwise sleep until the
        // next schedule is due, or the poll interval (which bounds how late a schedule created
        // or changed meanwhile is seen), whichever comes first; after an error, the interval.
        // Two batches at once, on two connections: their locked schedules never overlap (`SKIP
        // LOCKED`), and while one waits for the database (or holds the session index clock) the
        // other works.
        let now = jiff::Timestamp::now();
        let (first, second) = tokio::join!(
            store.fire_due(now, accounts.as_ref(), BATCH),
            store.fire_due(now, accounts.as_ref(), BATCH)
        );
        let mut full = false;
        let mut failed = false;
        for batch in [first, second] {
            match batch {
                Ok(fired) => {
                    full |= fired.len() == BATCH as usize;
                    for firing in fired {
                        tracing::info!(?firing, "schedule fired");
                    }
                }
                Err(error) => {
                    tracing::warn!(%error, "cannot fire schedules");
                    failed = true;
                }
            }
        }
        let pause = if failed {
            config.poll
        } else if full {
            Duration::ZERO
        } else {
            until_due(&store, config.poll).await
        };
        tokio::select! {
            () = tokio::time::sleep(pause) => {}
            () = &mut shutdown => return Ok(()),
        }
    }
}

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

struct Config {
    database_url: String,
    mail_accounts: MailAccounts,
    poll: Duration,
    log_level: tracing::Level,
}

fn config() -> Result<Config, String> {
    let get = |name: &str| std::env::var(name).ok().filter(|value| !value.is_empty());
    let database_url = get("DATABASE_URL").ok_or("DATABASE_URL is required")?;
    let email = match get("AGENT_EMAIL_ENABLED").as_deref() {
        None | Some("0") => false,
        Some("1") => true,
        Some(other) => return Err(format!("AGENT_EMAIL_ENABLED must be 0 or 1, got `{other}`")),
    };
    for variable in domain::mail_environment::LEGACY_VARIABLES {
        if get(variable).is_some() {
            return Err(format!(
                "{variable} is set: the scheduler never takes a mail credential path (it reads only the account ids of MAIL_ACCOUNTS_FILE)"
            ));
        }
    }
    let mail_accounts = match (email, get("MAIL_ACCOUNTS_FILE")) {
        (false, None) => MailAccounts::Off,
        (false, Some(_)) => return Err("MAIL_ACCOUNTS_FILE is set while AGENT_EMAIL_ENABLED is off".into()),
        (true, None) => MailAccounts::Legacy,
        (true, Some(path)) if !path.starts_with('/') => {
            return Err(MailEnvironmentError::NotAPath(domain::mail_environment::MANIFEST_VARIABLE).to_string());
        }
        (true, Some(path)) => {
            let mail = MailAccounts::Manifest(path.into());
            accounts(&mail).map_err(|error| format!("{error:#}"))?;
            mail
        }
    };
    let poll = role::positive(get("SCHEDULE_POLL_MILLISECONDS").as_deref(), 1000)
        .map_err(|reason| format!("SCHEDULE_POLL_MILLISECONDS is invalid: {reason}"))?;
    let log_level =
        role::log_level(get("LOG_LEVEL").as_deref()).map_err(|reason| format!("LOG_LEVEL is invalid: {reason}"))?;
    Ok(Config {
        database_url,
        mail_accounts,
        poll: Duration::from_millis(u64::from(poll)),
        log_level,
    })
}

fn main() -> ExitCode {
    let config = match role::prepare("steward-schedule", role::RoleKind::Application, config) {
        Ok(config) => config,
        Err(code) => return code,
    };
    role::run(config.log_level, fire(config))
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
    let store = Store::connect_lazy(&config.database_url, 4).context("configure the database pool")?;
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

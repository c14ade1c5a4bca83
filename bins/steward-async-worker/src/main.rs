//! The async-worker role: keeps Email mode's mailbox projections. It refreshes every connected
//! account from the mail provider with the account's **read** document only (the write and send
//! documents are never opened, and a unit that loads one is refused), on the owner's request
//! and on a background cadence, until SIGTERM or SIGINT.
//!
//! | Variable | Meaning | Default |
//! |---|---|---|
//! | `DATABASE_URL` | PostgreSQL URL of the async-worker login | required |
//! | `AGENT_EMAIL_MODE_ENABLED` | must be `1`: without Email mode this role has nothing to do | required |
//! | `AGENT_EMAIL_ENABLED`, `MAIL_ACCOUNTS_FILE` (or the legacy three paths) | the same mail configuration as the other application roles; only read documents are loaded | required |
//! | `MAIL_API_BASE_URL`, `MAIL_OAUTH_TOKEN_URL` | the provider (https; plain http only to loopback) | Google's |
//! | `EMAIL_BACKFILL_DAYS` | how far back the first update reaches (the account's coverage) | `30` |
//! | `EMAIL_REFRESH_EVERY_SECONDS` | the background cadence: each account is updated at least this often | `300` |
//! | `EMAIL_CLASSIFIER` and its settings | `offline` (the documented rules) or `model` (the agent's model within the email cost allowances; see `email::classify::from_env`) | `offline` |
//! | `AGENT_EMAIL_UNSUBSCRIBE_ENABLED` | takes the subscription census after each update | off |
//! | `AGENT_EMAIL_JUNK_FILTER_MODE`, `AGENT_EMAIL_JUNK_FILTER_EVIDENCE` | the junk first pass before assessment, and its reviewed evidence packet (see `email::junk::JunkSettings`) | `off`, none |
//! | `EMAIL_DNS_SERVER` | `IP:port` of the DNS server DKIM keys are looked up with (census evidence) | the host's `/etc/resolv.conf` |
//! | `ASYNC_WORKER_ID` | this process's name in claims | `async-worker-<pid>-<random>` |
//! | `LOG_LEVEL` | as for the other roles | `info` |
//!
//! Two commands help the owner build the junk filter's evidence packet (see
//! `email::calibrate`): `calibrate --max-threads N --max-cost-usd AMOUNT --out FILE [--account
//! ID] [--inbox]` replays the junk classifier over recent mail into a private results file, and
//! `junk-packet --review FILE --out FILE [--pilot-days N]` turns the owner's reviewed results
//! into the calibration (or pilot) packet.

use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use domain::env::{Env, EnvError, FromEnv, invalid};
use domain::flags::Flag;
use email::refresh::Refresher;
use email::worker::{AsyncWorker, Pace};
use mail_mcp::accounts::{AccountsError, ReadAccount};
use mail_mcp::gmail::Endpoints;

#[derive(Debug, thiserror::Error)]
enum ConfigError {
    #[error("{0}")]
    Env(#[from] EnvError),
    #[error("{0}")]
    Mail(#[from] AccountsError),
    #[error("Email mode needs the mail accounts: set AGENT_EMAIL_ENABLED=1 and MAIL_ACCOUNTS_FILE")]
    NoAccounts,
    #[error("cannot build the model client: {0}")]
    Http(#[from] reqwest::Error),
    #[error("{0}")]
    Classifier(String),
    #[error("unsubscribe assistance: {0}")]
    Dns(#[from] email::dns::DnsSetupError),
}

struct Config {
    database: store::Database,
    accounts: Vec<ReadAccount>,
    endpoints: Endpoints,
    backfill_days: u32,
    classifier: email::classify::Classifier,
    census: Option<Arc<email::evidence::Dkim>>,
    junk: email::junk::JunkSettings,
    pace: Pace,
    worker_id: String,
    /// Memory and People on: gather the owner's people from the mail each update brings.
    people: bool,
}

impl FromEnv for Config {
    type Error = ConfigError;

    fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let env = Env::new(&lookup);
        env.requiring(Flag::EmailMode, "Email mode is off and this role has nothing to do")?;
        let accounts = mail_mcp::accounts::read_accounts_from_env(env.lookup())?.ok_or(ConfigError::NoAccounts)?;
        let endpoints =
            Endpoints::from_env(|name| env.get(name)).map_err(|(variable, reason)| invalid(variable, reason))?;
        let backfill_days = env.positive("EMAIL_BACKFILL_DAYS", email::refresh::DEFAULT_BACKFILL_DAYS)?;
        if backfill_days > 365 {
            return Err(invalid("EMAIL_BACKFILL_DAYS", format!("`{backfill_days}` is more than 365")).into());
        }
        let http = reqwest::Client::builder().timeout(Duration::from_secs(120)).build()?;
        let classifier = email::classify::from_env(|name| env.get(name), http).map_err(ConfigError::Classifier)?;
        // The census runs only with unsubscribe assistance on; its evidence is checked with keys
        // from DNS (`EMAIL_DNS_SERVER`, or the host's resolver).
        let census = if env.flags()?.is_on(Flag::EmailUnsubscribe) {
            Some(Arc::new(email::evidence::Dkim::from_env(|name| env.get(name))?))
        } else {
            None
        };
        let junk = email::junk::JunkSettings {
            mode: env.flags()?.junk_filter_mode().into(),
            // Set, or the credential `junk-evidence` a drop-in loads (`LoadCredential=`).
            evidence: env
                .get("AGENT_EMAIL_JUNK_FILTER_EVIDENCE")
                .map(std::path::PathBuf::from)
                .or_else(|| {
                    env.get("CREDENTIALS_DIRECTORY")
                        .map(|directory| std::path::Path::new(&directory).join("junk-evidence"))
                }),
            principal: domain::ids::PrincipalId::owner(),
        };
        Ok(Config {
            people: env.flags()?.is_on(Flag::MemoryApi),
            census,
            junk,
            database: store::Database::from_env(&env, 4)?,
            accounts,
            endpoints,
            backfill_days,
            classifier,
            pace: Pace {
                cadence: Duration::from_secs(u64::from(env.positive("EMAIL_REFRESH_EVERY_SECONDS", 300)?)),
                ..Pace::default()
            },
            worker_id: env
                .get("ASYNC_WORKER_ID")
                .unwrap_or_else(|| role::instance_id("async-worker")),
        })
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        // `--version` is answered by `role::main`, as every role's.
        None | Some("--version") => role::main("steward-async-worker", role::RoleKind::Application, work),
        Some("calibrate") => calibrate(&args[1..]),
        Some("junk-packet") => junk_packet(&args[1..]),
        Some(other) => {
            eprintln!(
                "steward-async-worker: unknown command `{other}`; run it with no arguments, or `calibrate` or `junk-packet`"
            );
            ExitCode::from(role::EXIT_CONFIG)
        }
    }
}

/// One line on stderr and the configuration exit status.
fn refuse(command: &str, reason: &dyn std::fmt::Display) -> ExitCode {
    eprintln!("steward-async-worker {command}: {reason}");
    ExitCode::from(role::EXIT_CONFIG)
}

/// `calibrate`: replays the junk classifier over recent mail within the bounds, into a private
/// results file created exclusively (see `email::calibrate`).
fn calibrate(args: &[String]) -> ExitCode {
    let asked = match email::calibrate::calibrate_args(args) {
        Ok(asked) => asked,
        Err(error) => return refuse("calibrate", &error),
    };
    let config = match role::prepare("steward-async-worker calibrate", role::RoleKind::Application, || {
        Config::from_env(role::environment)
    }) {
        Ok(config) => config,
        Err(code) => return code,
    };
    // Created before anything is judged, so an existing file costs nothing.
    let file = match email::calibrate::create_private(&asked.out) {
        Ok(file) => file,
        Err(error) => return refuse("calibrate", &format!("cannot create {}: {error}", asked.out.display())),
    };
    role::run(role::LogLevel::Warn, async move {
        let store = config.database.connect_lazy();
        let gmail = mail_mcp::gmail::GmailClient::new(config.endpoints).context("build the mail provider client")?;
        let refresher = Refresher {
            store,
            gmail: Arc::new(gmail),
            backfill: jiff::SignedDuration::from_hours(24 * i64::from(config.backfill_days)),
            classifier: Arc::new(config.classifier),
            census: None,
            junk: config.junk,
        };
        let review = refresher.replay(&asked.bounds).await.context("replay")?;
        let mut writer = std::io::BufWriter::new(file);
        serde_json::to_writer_pretty(&mut writer, &review).context("write the results")?;
        let file = writer
            .into_inner()
            .map_err(|error| error.into_error())
            .context("write the results")?;
        file.sync_all().context("write the results")?;
        println!(
            "{} observations ({} protected conversations skipped, USD {} spent{}) written to {}; set each \
             owner_label to \"junk\" or \"keep\", then run `steward-async-worker junk-packet`",
            review.observations.len(),
            review.skipped_protected,
            review.spent_usd,
            review
                .stopped
                .as_deref()
                .map(|why| format!(", stopped early: {why}"))
                .unwrap_or_default(),
            asked.out.display()
        );
        Ok(())
    })
}

/// `junk-packet`: the evidence packet of a reviewed results file, written privately and
/// exclusively, and whether it is admitted.
fn junk_packet(args: &[String]) -> ExitCode {
    let asked = match email::calibrate::packet_args(args) {
        Ok(asked) => asked,
        Err(error) => return refuse("junk-packet", &error),
    };
    if let Err(code) = role::prepare("steward-async-worker junk-packet", role::RoleKind::Application, || {
        Ok::<(), String>(())
    }) {
        return code;
    }
    let review = match std::fs::read(&asked.review) {
        Ok(bytes) => bytes,
        Err(error) => {
            return refuse(
                "junk-packet",
                &format!("cannot read {}: {error}", asked.review.display()),
            );
        }
    };
    let pilot = asked.pilot_days.map(|days| email::calibrate::PilotBinding {
        principal: domain::ids::PrincipalId::owner().as_str().to_owned(),
        issued_at: jiff::Timestamp::now(),
        days,
    });
    let packet = match email::calibrate::packet_from_review(&review, pilot.as_ref()) {
        Ok(packet) => packet,
        Err(error) => return refuse("junk-packet", &format!("{}: {error}", asked.review.display())),
    };
    let bytes = match serde_json::to_vec_pretty(&packet) {
        Ok(bytes) => bytes,
        Err(error) => return refuse("junk-packet", &error),
    };
    let written =
        email::calibrate::create_private(&asked.out).and_then(|mut file| std::io::Write::write_all(&mut file, &bytes));
    if let Err(error) = written {
        return refuse(
            "junk-packet",
            &format!("cannot create {}: {error}", asked.out.display()),
        );
    }
    let model = packet["model"].as_str().unwrap_or_default();
    let admitted = match &pilot {
        None => domain::junk::CalibrationPacket::parse(&bytes, model).map(|_| ()),
        Some(pilot) => domain::junk::PilotPacket::parse(&bytes, model).and_then(|packet| {
            packet.admitted(&domain::ids::PrincipalId::owner(), &packet.account_id, pilot.issued_at)
        }),
    };
    match admitted {
        Ok(()) => {
            println!(
                "{} written; it meets its floor for model `{model}`",
                asked.out.display()
            );
            ExitCode::SUCCESS
        }
        Err(refused) => {
            println!("{} written, but it is not admitted: {refused}", asked.out.display());
            ExitCode::FAILURE
        }
    }
}

async fn work(config: Config) -> anyhow::Result<()> {
    let store = config.database.connect_lazy();
    let gmail = mail_mcp::gmail::GmailClient::new(config.endpoints).context("build the mail provider client")?;
    let worker = AsyncWorker {
        refresher: Refresher {
            store,
            gmail: Arc::new(gmail),
            backfill: jiff::SignedDuration::from_hours(24 * i64::from(config.backfill_days)),
            classifier: Arc::new(config.classifier),
            census: config.census,
            junk: config.junk,
        },
        accounts: config.accounts,
        worker_id: config.worker_id,
        pace: config.pace,
        people: config.people,
    };
    role::ready();
    worker.run(role::shutdown_signal()).await;
    Ok(())
}

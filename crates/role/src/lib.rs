//! What every role's thin `main` shares: startup hardening and configuration ([`prepare`]),
//! parsing `LOG_LEVEL`, setting up logging, running the async runtime, telling systemd the role
//! is ready and feeding its watchdog ([`ready`]), and waiting for SIGTERM or SIGINT.

use std::fmt::Display;
use std::future::Future;
use std::process::ExitCode;
use std::time::Duration;

pub use domain::env::{Env, FromEnv, LogLevel};
pub use hardening::environment::RoleKind;
use hardening::process::ALLOW_ROOT_VARIABLE;

/// Exit status of a role whose environment or host is refused before it starts.
pub const EXIT_CONFIG: u8 = 2;

/// Everything a role does before its runtime exists, in this order: answer `--version` (the
/// release identity, [`release::IDENTITY`]) and exit; refuse an environment that
/// holds what this kind of role must never hold; refuse a feature flag this release does not
/// support (`domain::flags::unsupported`: a flag that would do nothing); refuse root (unless `STEWARD_DEV_ALLOW_ROOT=1`);
/// set the umask to 0027, `no_new_privs`, not-dumpable, and drop every capability; then parse
/// the environment into a typed config (secret files are read, after their checks, with the
/// process already hardened). Any failure is one line on stderr, `<role>: <reason>`, and exit
/// status 2.
pub fn prepare<C, E: Display>(
    role: &str,
    kind: RoleKind,
    config: impl FnOnce() -> Result<C, E>,
) -> Result<C, ExitCode> {
    // `<role> --version`: the build's release identity, before anything is read or refused.
    if std::env::args().nth(1).as_deref() == Some("--version") {
        println!("{}", release::version_line(role));
        return Err(ExitCode::SUCCESS);
    }
    let refuse = |reason: &dyn Display| {
        eprintln!("{role}: {reason}");
        ExitCode::from(EXIT_CONFIG)
    };
    let variables: Vec<(String, String)> = std::env::vars_os()
        .map(|(name, value)| {
            (
                name.to_string_lossy().into_owned(),
                value.to_string_lossy().into_owned(),
            )
        })
        .collect();
    if let Some((name, reason)) = hardening::environment::refused(
        kind,
        variables.iter().map(|(name, value)| (name.as_str(), value.as_str())),
    ) {
        return Err(refuse(&format!("{name} is set: {reason}")));
    }
    if let Some(error) = domain::flags::unsupported(|name| std::env::var(name).ok()) {
        return Err(refuse(&error));
    }
    let allow_root = match std::env::var(ALLOW_ROOT_VARIABLE).ok().as_deref() {
        None | Some("" | "0") => false,
        Some("1") => true,
        Some(other) => return Err(refuse(&format!("{ALLOW_ROOT_VARIABLE} must be 0 or 1, got `{other}`"))),
    };
    hardening::process::harden(allow_root).map_err(|error| refuse(&error))?;
    config().map_err(|error| refuse(&error))
}

/// A daemon role's whole `main`: [`prepare`] with `LOG_LEVEL` and its configuration `C` read
/// from the process environment, then [`run`] `work` on it at that level.
pub fn main<C: FromEnv, F: Future<Output = anyhow::Result<()>>>(
    role: &str,
    kind: RoleKind,
    work: impl FnOnce(C) -> F,
) -> ExitCode {
    let configured = prepare(role, kind, || {
        let level = Env::new(&environment).log_level().map_err(|error| error.to_string())?;
        let config = C::from_env(environment).map_err(|error| error.to_string())?;
        Ok::<_, String>((level, config))
    });
    match configured {
        Ok((level, config)) => run(level, work(config)),
        Err(code) => code,
    }
}

/// Tells the service manager the role is ready (`READY=1`) and, when the unit sets
/// `WatchdogSec=`, feeds the watchdog at half its interval for as long as the runtime lives.
/// Without `NOTIFY_SOCKET` (not under systemd) it does nothing. Call from inside the runtime,
/// once the role is serving.
pub fn ready() {
    if let Err(error) = sd_notify::notify(false, &[sd_notify::NotifyState::Ready]) {
        tracing::warn!("cannot notify the service manager: {error}");
    }
    let mut microseconds = 0;
    if sd_notify::watchdog_enabled(false, &mut microseconds) && microseconds > 0 {
        let period = Duration::from_micros(microseconds / 2);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(period);
            loop {
                ticks.tick().await;
                let _ = sd_notify::notify(false, &[sd_notify::NotifyState::Watchdog]);
            }
        });
    }
}

/// The process environment, as the lookup every `Config::from_env` takes.
pub fn environment(name: &str) -> Option<String> {
    std::env::var(name).ok()
}

/// A process's name in leases and claims when its unit names none: `<prefix>-<pid>-<random>`.
pub fn instance_id(prefix: &str) -> String {
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        &uuid::Uuid::new_v4().simple().to_string()[..8]
    )
}

/// Sets up logging at `level`, then runs `work` on a multi-threaded runtime; a failure is
/// logged as one line and the process exits non-zero.
pub fn run(level: LogLevel, work: impl Future<Output = anyhow::Result<()>>) -> ExitCode {
    let level = match level {
        LogLevel::Error => tracing::Level::ERROR,
        LogLevel::Warn => tracing::Level::WARN,
        LogLevel::Info => tracing::Level::INFO,
        LogLevel::Debug => tracing::Level::DEBUG,
        LogLevel::Trace => tracing::Level::TRACE,
    };
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    // The DevTools driver logs every protocol message below `warn` (cookies, typed text, page
    // addresses): never written, whatever the level.
    let quiet = std::cmp::min(
        tracing::level_filters::LevelFilter::from_level(level),
        tracing::level_filters::LevelFilter::WARN,
    );
    let targets = tracing_subscriber::filter::Targets::new()
        .with_default(level)
        .with_target("chromiumoxide", quiet)
        .with_target("chromiumoxide_cdp", quiet)
        .with_target("chromiumoxide_types", quiet);
    use tracing_subscriber::layer::SubscriberExt as _;
    use tracing_subscriber::util::SubscriberInitExt as _;
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_target(false)
        .with_ansi(ansi)
        .finish()
        .with(targets)
        .init();
    let runtime = match tokio::runtime::Builder::new_multi_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(error) => {
            tracing::error!("start the async runtime: {error}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(work) {
        Ok(()) => ExitCode::SUCCESS,
        Err(error) => {
            tracing::error!("{error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Resolves on SIGTERM or SIGINT. The listeners are installed when this is called, not when
/// the future is first polled: a task that is busy before it first waits on the signal (a
/// loop's first pass) still sees one that arrives meanwhile. Call from inside the runtime.
pub fn shutdown_signal() -> impl Future<Output = ()> + Send + 'static {
    use tokio::signal::unix::{Signal, SignalKind, signal};
    let terminate = signal(SignalKind::terminate()).ok();
    let interrupt = signal(SignalKind::interrupt()).ok();
    async fn received(signal: Option<Signal>) {
        match signal {
            Some(mut signal) => {
                signal.recv().await;
            }
            None => std::future::pending::<()>().await,
        }
    }
    async move {
        tokio::select! {
            () = received(terminate) => {}
            () = received(interrupt) => {}
        }
        tracing::info!("shutting down");
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn instance_ids_are_unique_and_carry_the_prefix() {
        let (one, two) = (super::instance_id("worker"), super::instance_id("worker"));
        assert!(one.starts_with(&format!("worker-{}-", std::process::id())), "{one}");
        assert_ne!(one, two);
    }
}

//! What every role's thin `main` shares: startup hardening and configuration ([`prepare`]),
//! parsing `LOG_LEVEL`, setting up logging, running the async runtime, telling systemd the role
//! is ready and feeding its watchdog ([`ready`]), and waiting for SIGTERM or SIGINT.

use std::fmt::Display;
use std::future::Future;
use std::process::ExitCode;
use std::time::Duration;

pub use hardening::environment::RoleKind;
use hardening::process::ALLOW_ROOT_VARIABLE;

/// Exit status of a role whose environment or host is refused before it starts.
pub const EXIT_CONFIG: u8 = 2;

/// Everything a role does before its runtime exists, in this order: refuse an environment that
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

/// Parses `LOG_LEVEL` (unset means `info`).
pub fn log_level(value: Option<&str>) -> Result<tracing::Level, String> {
    match value {
        None | Some("info") => Ok(tracing::Level::INFO),
        Some("error") => Ok(tracing::Level::ERROR),
        Some("warn") => Ok(tracing::Level::WARN),
        Some("debug") => Ok(tracing::Level::DEBUG),
        Some("trace") => Ok(tracing::Level::TRACE),
        Some(other) => Err(format!("`{other}` is not one of error, warn, info, debug, trace")),
    }
}

/// Parses a positive integer setting (unset means `default`); the error says why, for the
/// caller to prefix with the variable's name.
pub fn positive(value: Option<&str>, default: u32) -> Result<u32, String> {
    match value {
        None => Ok(default),
        Some(text) => match text.trim().parse::<u32>() {
            Ok(value) if value > 0 => Ok(value),
            _ => Err(format!("`{text}` is not a positive integer")),
        },
    }
}

/// Sets up logging at `level`, then runs `work` on a multi-threaded runtime; a failure is
/// logged as one line and the process exits non-zero.
pub fn run(level: tracing::Level, work: impl Future<Output = anyhow::Result<()>>) -> ExitCode {
    let ansi = std::io::IsTerminal::is_terminal(&std::io::stdout());
    tracing_subscriber::fmt()
        .with_max_level(level)
        .with_target(false)
        .with_ansi(ansi)
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
    use super::*;

    #[test]
    fn log_levels_are_a_closed_set() {
        assert_eq!(log_level(None), Ok(tracing::Level::INFO));
        assert_eq!(log_level(Some("debug")), Ok(tracing::Level::DEBUG));
        assert!(log_level(Some("verbose")).is_err());
        assert_eq!(positive(None, 30), Ok(30));
        assert_eq!(positive(Some("5"), 30), Ok(5));
        assert!(positive(Some("0"), 30).is_err() && positive(Some("x"), 30).is_err());
    }
}

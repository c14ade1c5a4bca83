//! What every role's thin `main` shares: parsing `LOG_LEVEL`, setting up logging, running the
//! async runtime, and waiting for SIGTERM or SIGINT.

use std::future::Future;
use std::process::ExitCode;

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

/// Resolves on SIGTERM or SIGINT.
pub async fn shutdown_signal() {
    let terminate = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => {}
        () = terminate => {}
    }
    tracing::info!("shutting down");
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

//! Serving HTTP on a TCP listener so that no client can hoard the process's connections.
//!
//! `axum::serve` sets no timer, so hyper's header-read timeout never fires, and it accepts
//! without bound. A client that sends half a request header, or stops reading a response, would
//! hold its connection (and a file descriptor) forever; a few thousand such clients lock the
//! owner out. Here every connection is HTTP/1.1 (TLS and HTTP/2 end at the reverse proxy) with:
//!
//! - a **header-read timeout**, which also bounds an idle keep-alive connection: from the moment
//!   the server waits for a request's head (the first one, or the next after a response) until
//!   the whole head has arrived;
//! - a **write-stall timeout**: a connection whose writes make no progress that long (a client
//!   that stopped reading an event stream once the socket buffers filled) is closed, and the
//!   stream with it; the client reconnects with `Last-Event-ID` and loses nothing persisted;
//! - a **cap on open connections**: at the cap the listener stops accepting (the kernel's
//!   backlog holds the next ones) until a connection closes;
//! - **accept errors backed off** (5 ms doubling to 1 s) rather than spun on, as when the process
//!   is out of file descriptors.
//!
//! On shutdown the listener closes, idle connections close, and in-flight requests get
//! [`Limits::drain`] to finish.

mod stall;

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use domain::env::{Env, EnvError};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use stall::StallGuard;

/// The limits of one listener.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// How long a request's head may take to arrive, counted from when the server starts
    /// waiting for it (so also how long a keep-alive connection may sit idle).
    pub header_read: Duration,
    /// How long a connection's writes may make no progress before it is closed.
    pub write_stall: Duration,
    /// Open connections at most.
    pub max_connections: usize,
    /// How long in-flight requests may take to finish once shutdown begins.
    pub drain: Duration,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            header_read: Duration::from_secs(10),
            write_stall: Duration::from_secs(30),
            max_connections: 1024,
            drain: Duration::from_secs(10),
        }
    }
}

/// File descriptors kept back from the connection cap: the database pool, listening sockets,
/// files being read, the log.
const RESERVED_DESCRIPTORS: u64 = 128;

impl Limits {
    /// The limits configured by `{prefix}_HEADER_TIMEOUT_SECONDS`,
    /// `{prefix}_STALL_TIMEOUT_SECONDS` and `{prefix}_MAX_CONNECTIONS` (defaults
    /// [`Limits::default`]); the cap is lowered to fit under `open_files`, the process's limit
    /// on open file descriptors, less a reserve.
    pub fn from_env(env: &Env, prefix: Prefix, open_files: u64) -> Result<Limits, EnvError> {
        let defaults = Limits::default();
        let seconds = |variable: &'static str, default: Duration| -> Result<Duration, EnvError> {
            let default = u32::try_from(default.as_secs()).unwrap_or(u32::MAX);
            Ok(Duration::from_secs(u64::from(env.positive(variable, default)?)))
        };
        let (header, stall, connections) = prefix.variables();
        let wanted = env.positive(connections, u32::try_from(defaults.max_connections).unwrap_or(u32::MAX))?;
        let fits = open_files.saturating_sub(RESERVED_DESCRIPTORS).max(1);
        Ok(Limits {
            header_read: seconds(header, defaults.header_read)?,
            write_stall: seconds(stall, defaults.write_stall)?,
            max_connections: usize::try_from(u64::from(wanted).min(fits)).unwrap_or(usize::MAX),
            drain: defaults.drain,
        })
    }
}

/// Whose variables configure a listener.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Prefix {
    /// `API_*`.
    Api,
    /// `CALL_INGRESS_*`.
    CallIngress,
}

impl Prefix {
    const fn variables(self) -> (&'static str, &'static str, &'static str) {
        match self {
            Prefix::Api => (
                "API_HEADER_TIMEOUT_SECONDS",
                "API_STALL_TIMEOUT_SECONDS",
                "API_MAX_CONNECTIONS",
            ),
            Prefix::CallIngress => (
                "CALL_INGRESS_HEADER_TIMEOUT_SECONDS",
                "CALL_INGRESS_STALL_TIMEOUT_SECONDS",
                "CALL_INGRESS_MAX_CONNECTIONS",
            ),
        }
    }
}

/// Serves `app` on `listener` within `limits` until `shutdown` completes, then lets in-flight
/// requests finish for at most [`Limits::drain`].
pub async fn serve(
    listener: TcpListener,
    app: axum::Router,
    limits: Limits,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(limits.header_read);
    let slots = Arc::new(Semaphore::new(limits.max_connections.max(1)));
    let graceful = hyper_util::server::graceful::GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    let mut backoff = Duration::ZERO;
    loop {
        let slot = tokio::select! {
            slot = slots.clone().acquire_owned() => match slot {
                Ok(slot) => slot,
                Err(_) => break,
            },
            () = &mut shutdown => break,
        };
        let stream = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    backoff = Duration::ZERO;
                    stream
                }
                Err(error) if is_connection_error(&error) => continue,
                Err(error) => {
                    backoff = (backoff * 2).clamp(Duration::from_millis(5), Duration::from_secs(1));
                    tracing::warn!(%error, backoff_ms = backoff.as_millis(), "cannot accept a connection; backing off");
                    tokio::time::sleep(backoff).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        if let Err(error) = stream.set_nodelay(true) {
            tracing::debug!(%error, "cannot set TCP_NODELAY");
        }
        let io = TokioIo::new(StallGuard::new(stream, limits.write_stall));
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let connection = graceful.watch(http.serve_connection(io, service));
        tokio::spawn(async move {
            if let Err(error) = connection.await {
                tracing::debug!(%error, "connection ended");
            }
            drop(slot);
        });
    }
    drop(listener);
    if tokio::time::timeout(limits.drain, graceful.shutdown()).await.is_err() {
        tracing::info!(
            drain_seconds = limits.drain.as_secs(),
            "connections still open after the drain; closing them"
        );
    }
    Ok(())
}

/// Errors of one connection that never reached the server: nothing to back off from.
fn is_connection_error(error: &std::io::Error) -> bool {
    matches!(
        error.kind(),
        std::io::ErrorKind::ConnectionRefused
            | std::io::ErrorKind::ConnectionAborted
            | std::io::ErrorKind::ConnectionReset
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limits(pairs: &[(&str, &str)], open_files: u64) -> Result<Limits, EnvError> {
        let lookup = |name: &str| {
            pairs
                .iter()
                .find(|(key, _)| *key == name)
                .map(|(_, value)| (*value).to_owned())
        };
        Limits::from_env(&Env::new(&lookup), Prefix::Api, open_files)
    }

    #[test]
    fn unset_variables_give_the_defaults() {
        assert_eq!(limits(&[], 65_536), Ok(Limits::default()));
    }

    #[test]
    fn each_variable_sets_its_limit() {
        let set = limits(
            &[
                ("API_HEADER_TIMEOUT_SECONDS", "3"),
                ("API_STALL_TIMEOUT_SECONDS", "7"),
                ("API_MAX_CONNECTIONS", "50"),
            ],
            65_536,
        )
        .expect("valid");
        assert_eq!(
            (set.header_read, set.write_stall, set.max_connections),
            (Duration::from_secs(3), Duration::from_secs(7), 50)
        );
    }

    #[test]
    fn the_cap_fits_under_the_open_files_limit() {
        assert_eq!(limits(&[], 1024).expect("valid").max_connections, 1024 - 128);
        let asked = limits(&[("API_MAX_CONNECTIONS", "5000")], 2048).expect("valid");
        assert_eq!(asked.max_connections, 2048 - 128);
        assert_eq!(limits(&[], 10).expect("valid").max_connections, 1, "never none");
    }

    #[test]
    fn zero_or_words_are_refused_naming_the_variable() {
        for (variable, value) in [
            ("API_HEADER_TIMEOUT_SECONDS", "0"),
            ("API_STALL_TIMEOUT_SECONDS", "soon"),
            ("API_MAX_CONNECTIONS", "-1"),
        ] {
            let refused = limits(&[(variable, value)], 65_536).expect_err("refused");
            assert!(refused.to_string().contains(variable), "{refused}");
        }
    }
}

//! Listeners the service manager passes (socket activation, `sd_listen_fds(3)`), by the name
//! their socket unit gives them (`FileDescriptorName=`). Under systemd the browser role has a
//! private network of its own, so its control plane and handoff address cannot be bound inside
//! it: their socket units bind them on the host's loopback and pass them in. The egress relay's
//! Unix socket arrives the same way, owned by the browser role's user.

use std::collections::BTreeMap;
use std::net::TcpListener;
use std::os::unix::net::UnixListener;

/// One passed listener.
#[derive(Debug)]
pub enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

/// The listeners passed to this process, by name.
#[derive(Debug, Default)]
pub struct Passed {
    listeners: BTreeMap<String, Listener>,
    /// Whether the process runs as a systemd service (`INVOCATION_ID` is set).
    pub under_systemd: bool,
}

impl Passed {
    /// Takes what the service manager passed. Call first thing in `main`, before any thread
    /// starts: the protocol's `LISTEN_PID` and `LISTEN_FDS` are removed from the environment,
    /// so no browser or display started later believes the listeners are its own.
    ///
    /// The role counts as running under systemd when `INVOCATION_ID` is set (systemd sets it
    /// for every service; a process a service started inherits it, so start the role from a
    /// clean environment there).
    pub fn take() -> Result<Passed, String> {
        let under_systemd = std::env::var_os("INVOCATION_ID").is_some_and(|value| !value.is_empty());
        if std::env::var_os("LISTEN_FDS_FIRST_FD").is_some() {
            return Err("LISTEN_FDS_FIRST_FD is not systemd's protocol; the listeners start at descriptor 3".into());
        }
        let named: Vec<(i32, String)> = sd_notify::listen_fds_with_names(false)
            .map_err(|error| format!("the listeners systemd passed: {error}"))?
            .collect();
        if named.is_empty() {
            // None passed to this process (a LISTEN_FDS meant for another is left alone).
            return Ok(Passed {
                listeners: BTreeMap::new(),
                under_systemd,
            });
        }
        let mut fds = listenfd::ListenFd::from_env();
        let mut listeners = BTreeMap::new();
        for (fd, name) in named {
            let index = usize::try_from(fd - 3).map_err(|_| format!("listener {name}: descriptor {fd}"))?;
            let listener = match fds.take_tcp_listener(index) {
                Ok(Some(tcp)) => Listener::Tcp(tcp),
                _ => match fds.take_unix_listener(index) {
                    Ok(Some(unix)) => Listener::Unix(unix),
                    _ => return Err(format!("listener {name} is neither a TCP nor a Unix stream socket")),
                },
            };
            if listeners.insert(name.clone(), listener).is_some() {
                return Err(format!("two listeners are named {name}"));
            }
        }
        Ok(Passed {
            listeners,
            under_systemd,
        })
    }

    /// Whether any listener was passed.
    pub fn is_empty(&self) -> bool {
        self.listeners.is_empty()
    }

    /// The passed TCP listener `name`, listening on loopback, non-blocking for tokio.
    pub fn tcp(&mut self, name: &str) -> Result<Option<tokio::net::TcpListener>, String> {
        match self.listeners.remove(name) {
            None => Ok(None),
            Some(Listener::Unix(_)) => Err(format!("the listener {name} must be a TCP socket")),
            Some(Listener::Tcp(listener)) => {
                let address = listener
                    .local_addr()
                    .map_err(|error| format!("listener {name}: {error}"))?;
                if !address.ip().is_loopback() {
                    return Err(format!("the listener {name} ({address}) must listen on loopback only"));
                }
                listener
                    .set_nonblocking(true)
                    .and_then(|()| tokio::net::TcpListener::from_std(listener))
                    .map(Some)
                    .map_err(|error| format!("listener {name}: {error}"))
            }
        }
    }

    /// The passed Unix listener `name`, non-blocking for tokio.
    pub fn unix(&mut self, name: &str) -> Result<Option<tokio::net::UnixListener>, String> {
        match self.listeners.remove(name) {
            None => Ok(None),
            Some(Listener::Tcp(_)) => Err(format!("the listener {name} must be a Unix stream socket")),
            Some(Listener::Unix(listener)) => listener
                .set_nonblocking(true)
                .and_then(|()| tokio::net::UnixListener::from_std(listener))
                .map(Some)
                .map_err(|error| format!("listener {name}: {error}")),
        }
    }

    /// Refuses listeners nobody took (a socket unit this role does not know).
    pub fn all_taken(&self) -> Result<(), String> {
        match self.listeners.keys().next() {
            None => Ok(()),
            Some(name) => Err(format!(
                "systemd passed a listener named {name}, which this role does not use"
            )),
        }
    }
}

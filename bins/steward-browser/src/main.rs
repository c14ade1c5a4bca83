//! `steward-browser`: the hosted browser role. It owns the browsers (one headed Chromium per
//! active task, under Xvfb on a server), each behind its own egress proxy, and serves their
//! control plane on loopback to whoever holds the control-plane credential
//! (`steward_browser::control`).
//!
//! | Variable | Meaning | Default |
//! |---|---|---|
//! | `BROWSER_CONTROL_CREDENTIAL_FILE` | the control plane's credential (owner-only, at least 32 bytes) | required |
//! | `BROWSER_CONTROL_LISTEN` | the control plane's address (loopback only) | `127.0.0.1:8005` |
//! | `BROWSER_HANDOFF_LISTEN` | the handoff address (loopback; the reverse proxy exposes `/handoff`) | `127.0.0.1:8006` |
//! | `BROWSER_STORAGE_KEY_FILE` | the key sealing the profiles' sessions: 32 bytes, owner-only | required |
//! | `BROWSER_STATE_DIRECTORY` | where the sealed sessions are kept (owner-only) | `$STATE_DIRECTORY` (systemd), else required |
//! | `BROWSER_DATA_DIRECTORY` | where each browser's private data directory is made (owner-only) | `$RUNTIME_DIRECTORY` (systemd), else required |
//! | `BROWSER_EXECUTABLE` | Chromium itself | `/usr/lib/chromium/chromium` |
//! | `BROWSER_DISPLAY` | an X display to draw on (a desktop); unset: the role starts `Xvfb` | unset |
//! | `BROWSER_XVFB` | the `Xvfb` executable | `/usr/bin/Xvfb` |
//! | `BROWSER_DEMO_SITE`, `BROWSER_DEMO_SITE_KEY` | development only (`cargo xtask dev --demo-browser`): every admitted tunnel goes to this loopback address, whose certificate key the browsers accept; refused under systemd | unset |
//! | `BROWSER_EGRESS_RELAY` | the egress relay's Unix socket (`steward-browser-egress`): the proxy's one way out; required under systemd | unset: the proxy connects itself |
//! | `LOG_LEVEL` | as for the other roles | `info` |
//!
//! It refuses to start with a model key (any `*_API_KEY`, a model vendor's key variable),
//! `API_TOKEN_FILE`, a non-empty `AUTH_SCOPES` or the call-provider key.
//!
//! Under systemd (`steward-browser.service`) the role has a private network: its two listeners
//! arrive from `steward-browser-control.socket` and `steward-browser-handoff.socket` (named
//! `control` and `handoff`), and its browsers reach websites only through the egress relay.
//! Both are required there; outside systemd the role binds the two addresses itself.

use std::net::SocketAddr;
use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use domain::env::{Env, EnvError, FromEnv, invalid};
use futures_util::FutureExt as _;
use steward_browser::activation::Passed;
use steward_browser::ceremony::{Ceremonies, system_clock};
use steward_browser::chromium::CHROMIUM;
use steward_browser::control::{Control, router};
use steward_browser::display::VirtualDisplay;
use steward_browser::handoff::{self, Handoff};
use steward_browser::proxy::{SystemResolver, Upstream};
use steward_browser::storage::Vault;
use steward_browser::tasks::{Browsers, Template};

/// The shortest control-plane credential accepted.
const MIN_CREDENTIAL_BYTES: usize = 32;

#[derive(Debug, thiserror::Error)]
enum ConfigError {
    #[error("{0}")]
    Env(#[from] EnvError),
    #[error("BROWSER_CONTROL_CREDENTIAL_FILE: {0}")]
    Credential(#[from] hardening::secret_file::SecretFileError),
    #[error("BROWSER_CONTROL_CREDENTIAL_FILE holds fewer than {MIN_CREDENTIAL_BYTES} bytes")]
    CredentialTooShort,
    #[error("BROWSER_STORAGE_KEY_FILE: {0}")]
    StorageKey(hardening::secret_file::SecretFileError),
    #[error("BROWSER_STORAGE_KEY_FILE must hold exactly 32 bytes (make one with: head -c 32 /dev/urandom)")]
    StorageKeyLength,
}

struct Config {
    credential: Vec<u8>,
    listen: SocketAddr,
    handoff: SocketAddr,
    storage_key: [u8; 32],
    state: PathBuf,
    data_root: PathBuf,
    executable: PathBuf,
    display: Option<String>,
    xvfb: PathBuf,
    relay: Option<PathBuf>,
    /// The offline demo's site: where every admitted tunnel goes, and its key.
    demo: Option<(SocketAddr, String)>,
}

impl FromEnv for Config {
    type Error = ConfigError;

    fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, ConfigError> {
        let env = Env::new(&lookup);
        let path = env.required(hardening::environment::BROWSER_CONTROL_CREDENTIAL_FILE)?;
        let mut credential = hardening::secret_file::read_owner_only_at_most(Path::new(&path), 4096)?;
        while credential.last().is_some_and(u8::is_ascii_whitespace) {
            credential.pop();
        }
        if credential.len() < MIN_CREDENTIAL_BYTES {
            return Err(ConfigError::CredentialTooShort);
        }
        let listen: SocketAddr = env.parsed("BROWSER_CONTROL_LISTEN", SocketAddr::from(([127, 0, 0, 1], 8005)))?;
        if !listen.ip().is_loopback() {
            return Err(invalid("BROWSER_CONTROL_LISTEN", "the control plane listens on loopback only").into());
        }
        let handoff: SocketAddr = env.parsed("BROWSER_HANDOFF_LISTEN", SocketAddr::from(([127, 0, 0, 1], 8006)))?;
        if !handoff.ip().is_loopback() {
            return Err(invalid(
                "BROWSER_HANDOFF_LISTEN",
                "the handoff address listens on loopback only (behind the reverse proxy)",
            )
            .into());
        }
        let key_path = env.required("BROWSER_STORAGE_KEY_FILE")?;
        let key = hardening::secret_file::read_owner_only_at_most(Path::new(&key_path), 64)
            .map_err(ConfigError::StorageKey)?;
        let storage_key: [u8; 32] = key.try_into().map_err(|_| ConfigError::StorageKeyLength)?;
        let state = private_directory(&env, "BROWSER_STATE_DIRECTORY", "STATE_DIRECTORY", "StateDirectory=")?;
        let data_root = private_directory(&env, "BROWSER_DATA_DIRECTORY", "RUNTIME_DIRECTORY", "RuntimeDirectory=")?;
        let executable = PathBuf::from(
            env.get("BROWSER_EXECUTABLE")
                .filter(|value| !value.is_empty())
                .unwrap_or_else(|| CHROMIUM.to_owned()),
        );
        if !executable.is_file() {
            return Err(invalid(
                "BROWSER_EXECUTABLE",
                format!(
                    "{} does not exist (Debian: apt-get install chromium)",
                    executable.display()
                ),
            )
            .into());
        }
        let display = env.get("BROWSER_DISPLAY").filter(|value| !value.is_empty());
        let xvfb = PathBuf::from(
            env.get("BROWSER_XVFB")
                .filter(|value| !value.is_empty())
                .unwrap_or_else(|| "/usr/bin/Xvfb".to_owned()),
        );
        if display.is_none() && !xvfb.is_file() {
            return Err(invalid(
                "BROWSER_XVFB",
                format!(
                    "{} does not exist (Debian: apt-get install xvfb), and BROWSER_DISPLAY is unset",
                    xvfb.display()
                ),
            )
            .into());
        }
        let relay = env
            .get("BROWSER_EGRESS_RELAY")
            .filter(|value| !value.is_empty())
            .map(PathBuf::from);
        if relay.as_ref().is_some_and(|path| !path.is_absolute()) {
            return Err(invalid("BROWSER_EGRESS_RELAY", "an absolute path to the relay's socket").into());
        }
        let under_systemd = env.get("INVOCATION_ID").is_some_and(|value| !value.is_empty());
        let demo = match (
            env.get("BROWSER_DEMO_SITE").filter(|value| !value.is_empty()),
            env.get("BROWSER_DEMO_SITE_KEY").filter(|value| !value.is_empty()),
        ) {
            (None, None) => None,
            (Some(site), Some(key)) => {
                let address = site
                    .parse::<SocketAddr>()
                    .ok()
                    .filter(|address| address.ip().is_loopback())
                    .ok_or_else(|| invalid("BROWSER_DEMO_SITE", "a loopback address and port (the demo's site)"))?;
                // A SHA-256 in base64, as Chromium's --ignore-certificate-errors-spki-list takes it.
                if key.len() != 44 || !key.ends_with('=') || key.contains(',') {
                    return Err(invalid(
                        "BROWSER_DEMO_SITE_KEY",
                        "the demo site's key: the base64 SHA-256 of its certificate's public key",
                    )
                    .into());
                }
                Some((address, key))
            }
            _ => {
                return Err(invalid(
                    "BROWSER_DEMO_SITE",
                    "BROWSER_DEMO_SITE and BROWSER_DEMO_SITE_KEY go together (development only)",
                )
                .into());
            }
        };
        if demo.is_some() && !cfg!(debug_assertions) {
            return Err(invalid(
                "BROWSER_DEMO_SITE",
                "development only: a release build never sends its browsers to a demo site",
            )
            .into());
        }
        if demo.is_some() && (under_systemd || relay.is_some()) {
            return Err(invalid(
                "BROWSER_DEMO_SITE",
                "development only: refused under systemd and with BROWSER_EGRESS_RELAY",
            )
            .into());
        }
        if relay.is_none() && under_systemd {
            return Err(invalid(
                "BROWSER_EGRESS_RELAY",
                "required under systemd (INVOCATION_ID is set): the role's network is private, and its browsers reach websites only through steward-browser-egress (/run/steward-browser-egress.sock)",
            )
            .into());
        }
        Ok(Config {
            credential,
            listen,
            handoff,
            storage_key,
            state,
            data_root,
            executable,
            display,
            xvfb,
            relay,
            demo,
        })
    }
}

/// The directory `variable` names, or else the one systemd names in `fallback` (for a unit
/// with `directive`): it must exist and be owner-only.
fn private_directory(
    env: &Env,
    variable: &'static str,
    fallback: &str,
    directive: &str,
) -> Result<PathBuf, ConfigError> {
    let directory = env
        .get(variable)
        .filter(|value| !value.is_empty())
        .or_else(|| env.get(fallback).filter(|value| !value.is_empty()))
        .map(PathBuf::from)
        .ok_or_else(|| {
            invalid(
                variable,
                format!("required (or {fallback}, set by systemd's {directive})"),
            )
        })?;
    let private =
        std::fs::metadata(&directory).is_ok_and(|meta| meta.is_dir() && meta.permissions().mode() & 0o077 == 0);
    if !private {
        return Err(invalid(
            variable,
            format!(
                "{} must be an existing directory only its owner can enter (mode 0700)",
                directory.display()
            ),
        )
        .into());
    }
    Ok(directory)
}

fn main() -> ExitCode {
    // Before anything else: no thread may run while the activation variables are removed.
    let passed = match Passed::take() {
        Ok(passed) => passed,
        Err(error) => {
            eprintln!("steward-browser: {error}");
            return ExitCode::from(role::EXIT_CONFIG);
        }
    };
    role::main("steward-browser", role::RoleKind::Browser, move |config| {
        serve(config, passed)
    })
}

/// The passed listener `name`, or (outside systemd) `address` bound here.
async fn listener(passed: &mut Passed, name: &str, address: SocketAddr) -> anyhow::Result<tokio::net::TcpListener> {
    if let Some(listener) = passed.tcp(name).map_err(anyhow::Error::msg)? {
        return Ok(listener);
    }
    if passed.under_systemd {
        anyhow::bail!(
            "under systemd the {name} listener comes from steward-browser-{name}.socket (FileDescriptorName={name}): the role's own network is private"
        );
    }
    tokio::net::TcpListener::bind(address)
        .await
        .with_context(|| format!("listen on {address}"))
}

async fn serve(config: Config, mut passed: Passed) -> anyhow::Result<()> {
    let control = listener(&mut passed, "control", config.listen).await?;
    let handoff = listener(&mut passed, "handoff", config.handoff).await?;
    passed.all_taken().map_err(anyhow::Error::msg)?;
    // Kept for as long as the role runs; dropped (stopped) on the way out.
    let mut virtual_display = None;
    let display = match config.display {
        Some(display) => display,
        None => {
            let xvfb = config.xvfb.clone();
            let started = tokio::task::spawn_blocking(move || VirtualDisplay::start(&xvfb))
                .await
                .context("start Xvfb")??;
            let name = started.name().to_owned();
            virtual_display = Some(started);
            name
        }
    };
    // A crash leaves browsers' data directories behind (cookies in Chromium's own store):
    // none of them belongs to a running browser now.
    if let Ok(entries) = std::fs::read_dir(&config.data_root) {
        for entry in entries.flatten() {
            if entry.file_name().to_string_lossy().starts_with("browser-") {
                let _ = std::fs::remove_dir_all(entry.path());
            }
        }
    }
    // Chromium's sandbox cannot run as root: only a development run (STEWARD_DEV_ALLOW_ROOT)
    // gets here as root, and its browsers run without it.
    let root = std::fs::metadata("/proc/self").is_ok_and(|meta| meta.uid() == 0);
    if root {
        tracing::warn!("running as root (development): the browsers run without Chromium's sandbox");
    }
    let vault = Arc::new(Vault::new(&config.storage_key, config.state));
    let ceremonies = Arc::new(Ceremonies::new(system_clock()));
    let browsers = Arc::new(Browsers::new(
        Template {
            executable: config.executable,
            display,
            sandbox: !root,
            local_site_keys: config.demo.iter().map(|(_, key)| key.clone()).collect(),
            upstream: match (config.relay, config.demo) {
                (_, Some((site, _))) => Upstream::Local(site),
                (Some(relay), None) => Upstream::Relay(relay),
                (None, None) => Upstream::Public(Arc::new(SystemResolver)),
            },
            data_root: config.data_root,
        },
        Arc::clone(&vault),
    ));
    let control_app = router(Arc::new(Control::new(
        Arc::clone(&browsers),
        Arc::clone(&ceremonies),
        &config.credential,
    )));
    let handoff_state = Arc::new(Handoff {
        ceremonies,
        vault,
        browsers: Arc::clone(&browsers),
    });
    let handoff_app = handoff::router(Arc::clone(&handoff_state));
    // Sign-in pages that ended without saying so (expired, replaced) close their browsers, and
    // so does a task's browser nobody used for IDLE (its run ended unseen, or waits long for
    // the owner: an approved action opens its page again).
    let sweeper = tokio::spawn(async move {
        let mut ticks = tokio::time::interval(std::time::Duration::from_secs(10));
        loop {
            ticks.tick().await;
            steward_browser::signin::sweep(&handoff_state).await;
            let closed = handoff_state.browsers.close_idle(steward_browser::tasks::IDLE).await;
            if closed > 0 {
                tracing::info!(closed, "idle browsers closed");
            }
        }
    });
    tracing::info!(control = %control.local_addr()?, handoff = %handoff.local_addr()?, "steward-browser listening");
    role::ready();
    let shutdown = role::shutdown_signal().shared();
    let limits = listener::Limits::default();
    let (control_served, handoff_served) = tokio::join!(
        listener::serve(control, control_app, limits, shutdown.clone()),
        listener::serve(handoff, handoff_app, limits, shutdown),
    );
    sweeper.abort();
    browsers.close_all().await;
    drop(virtual_display);
    control_served.context("serve the control plane")?;
    handoff_served.context("serve the handoff address")
}

//! `steward-browser-egress`: the egress relay, the browser role's one way out of its private
//! network (`steward_browser::relay`). It holds nothing: no credential, no key, no profile.
//!
//! | Variable | Meaning | Default |
//! |---|---|---|
//! | `BROWSER_EGRESS_SOCKET` | the Unix socket to listen on, made owner-only (outside systemd; under systemd it comes from `steward-browser-egress.socket`, named `relay`) | required outside systemd |
//! | `LOG_LEVEL` | as for the other roles | `info` |
//!
//! It refuses to start with any secret another role holds (a model key, the owner's bearer,
//! scopes, the call-provider key, the browser's control-plane credential or storage key).

use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use anyhow::Context as _;
use domain::env::{Env, EnvError, FromEnv, invalid};
use steward_browser::activation::Passed;
use steward_browser::proxy::{SystemResolver, Upstream};
use steward_browser::relay::WithoutHost;

struct Config {
    socket: Option<PathBuf>,
}

impl FromEnv for Config {
    type Error = EnvError;

    fn from_env(lookup: impl Fn(&str) -> Option<String>) -> Result<Config, EnvError> {
        let env = Env::new(&lookup);
        let socket = env
            .get("BROWSER_EGRESS_SOCKET")
            .filter(|value| !value.is_empty())
            .map(PathBuf::from);
        if socket.as_ref().is_some_and(|path| !path.is_absolute()) {
            return Err(invalid("BROWSER_EGRESS_SOCKET", "an absolute path"));
        }
        Ok(Config { socket })
    }
}

fn main() -> ExitCode {
    let passed = match Passed::take() {
        Ok(passed) => passed,
        Err(error) => {
            eprintln!("steward-browser-egress: {error}");
            return ExitCode::from(role::EXIT_CONFIG);
        }
    };
    role::main("steward-browser-egress", role::RoleKind::BrowserEgress, move |config| {
        serve(config, passed)
    })
}

async fn serve(config: Config, mut passed: Passed) -> anyhow::Result<()> {
    let listener = match passed.unix("relay").map_err(anyhow::Error::msg)? {
        Some(listener) => listener,
        None if passed.under_systemd => anyhow::bail!(
            "under systemd the relay's socket comes from steward-browser-egress.socket (FileDescriptorName=relay), owned by the browser role's user"
        ),
        None => {
            let path = config
                .socket
                .context("BROWSER_EGRESS_SOCKET: required (the Unix socket to listen on)")?;
            // A socket left by an earlier run is replaced; anything else at the path is not.
            if std::fs::symlink_metadata(&path).is_ok_and(|meta| meta.file_type().is_socket()) {
                std::fs::remove_file(&path).with_context(|| format!("remove the old {}", path.display()))?;
            }
            let listener =
                tokio::net::UnixListener::bind(&path).with_context(|| format!("listen on {}", path.display()))?;
            std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
                .with_context(|| format!("make {} owner-only", path.display()))?;
            listener
        }
    };
    passed.all_taken().map_err(anyhow::Error::msg)?;
    if passed.under_systemd {
        // The unit denies the host's networks: a name server there answers nothing.
        let conf = std::fs::read_to_string("/etc/resolv.conf").unwrap_or_default();
        for server in steward_browser::relay::denied_name_servers(&conf) {
            tracing::warn!(
                %server,
                "this name server is on the host's networks, which steward-browser-egress.service denies: allow it in a drop-in (IPAddressAllow={server}), or no website name resolves"
            );
        }
    }
    tracing::info!("steward-browser-egress listening");
    role::ready();
    tokio::select! {
        served = steward_browser::relay::serve(listener, Upstream::Public(Arc::new(WithoutHost(SystemResolver))), None) => {
            served.context("serve the relay")
        }
        () = role::shutdown_signal() => Ok(()),
    }
}

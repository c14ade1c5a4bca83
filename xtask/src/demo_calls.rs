//! Calling in the local stacks. Every stack (`cargo xtask dev --demo-calls`, `cargo xtask e2e`,
//! `cargo xtask contract`) gets a reviewed call configuration written to its directory and the
//! variables that turn calling on with it ([`environment`]). The dev stack with `--demo-calls`
//! and the browser tests also run the provider stand-in (`steward-demo-calls`), the call-ingress
//! listener and the call worker ([`DemoCalls`]): an approved call is placed and answered, and a
//! simulated call in flows from a signed webhook through ingress and the call worker to a
//! `call_finished` notification.

use std::fs;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Child;

use anyhow::{Context, bail};

/// The number the demo's configuration and provider share.
const NUMBER: &str = "+15550100000";

/// The demo's configuration: a public profile of nobody real.
const CONFIGURATION: &str = r#"{
  "version": 1,
  "account_id": "demo",
  "phone_number": "+15550100000",
  "public_name": "Alex Rivera",
  "public_profile": "Alex Rivera is a furniture maker in Portland. Alex takes commissions by email and answers within two working days.",
  "voice": "maya",
  "max_duration_minutes": 5,
  "webhook_url": "https://steward.example.org/webhooks/callprov"
}
"#;

/// Writes `dir/callprov-configuration.json` (writable by its owner only) and returns the
/// variables that turn calling on with it.
pub fn environment(dir: &Path) -> anyhow::Result<Vec<(String, String)>> {
    fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let path = dir.join("callprov-configuration.json");
    fs::write(&path, CONFIGURATION).with_context(|| format!("write {}", path.display()))?;
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).context("chmod the call configuration")?;
    Ok(vec![
        ("AGENT_CALL_ENABLED".to_owned(), "1".to_owned()),
        ("CALLPROV_CONFIGURATION_FILE".to_owned(), path.display().to_string()),
    ])
}

/// The provider stand-in, running, and what the call roles take from it.
pub struct DemoCalls {
    child: Child,
    ingress: SocketAddr,
    /// The variables of [`environment`], for the configuration written at start.
    configuration: Vec<(String, String)>,
    /// What `provider.env` names, all of it required.
    base_url: String,
    key_file: String,
    secret_file: String,
    control_url: String,
}

impl DemoCalls {
    /// Writes the configuration under `dir` (made afresh, owner-only), starts the stand-in
    /// delivering its webhooks to a call-ingress listener on a free loopback port, and waits
    /// until it is ready.
    pub fn start(bin: &Path, dir: &Path) -> anyhow::Result<DemoCalls> {
        // A free loopback port for the listener (it binds it once the stand-in is up).
        let ingress = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|listener| listener.local_addr())
            .context("find a free port")?;
        let args = [NUMBER.to_owned(), format!("http://{ingress}/webhooks/callprov")];
        let (mut child, provider) = crate::stand_in::start(bin, "steward-demo-calls", dir, &args)?;
        let provided = |name: &str| {
            provider
                .iter()
                .find(|(variable, _)| variable == name)
                .map(|(_, value)| value.clone())
                .with_context(|| format!("steward-demo-calls wrote no {name}"))
        };
        let named = (|| {
            Ok::<_, anyhow::Error>((
                environment(dir)?,
                provided("CALLPROV_BASE_URL")?,
                provided("CALLPROV_API_KEY_FILE")?,
                provided("CALLPROV_WEBHOOK_SECRET_FILE")?,
                provided("DEMO_CALLS_CONTROL_URL")?,
            ))
        })();
        let (configuration, base_url, key_file, secret_file, control_url) = match named {
            Ok(named) => named,
            Err(error) => {
                crate::stop(&mut child);
                return Err(error);
            }
        };
        Ok(DemoCalls {
            child,
            ingress,
            configuration,
            base_url,
            key_file,
            secret_file,
            control_url,
        })
    }

    /// What every role takes: calling on with the demo's configuration, and `call_finished`
    /// notifications (which need the notification routes and their delivery).
    pub fn environment(&self) -> Vec<(String, String)> {
        let mut environment = self.configuration.clone();
        for name in [
            "AGENT_CALL_NOTIFICATIONS_ENABLED",
            "AGENT_NOTIFICATION_API_ENABLED",
            "AGENT_NOTIFICATION_DISPATCH_ENABLED",
        ] {
            environment.push((name.to_owned(), "1".to_owned()));
        }
        environment
    }

    /// Where `POST /demo/inbound` simulates a call in.
    pub fn control_url(&self) -> &str {
        &self.control_url
    }

    /// The call-ingress listener's own variables (the webhook secret, its address).
    pub fn ingress_environment(&self) -> Vec<(String, String)> {
        vec![
            ("AGENT_CALL_INGRESS_ENABLED".to_owned(), "1".to_owned()),
            ("CALLPROV_WEBHOOK_SECRET_FILE".to_owned(), self.secret_file.clone()),
            ("CALL_INGRESS_LISTEN_ADDR".to_owned(), self.ingress.to_string()),
        ]
    }

    /// The call worker's own variables (the provider and its key), passing often so the demo
    /// is quick.
    pub fn worker_environment(&self) -> Vec<(String, String)> {
        vec![
            ("CALLPROV_BASE_URL".to_owned(), self.base_url.clone()),
            ("CALLPROV_API_KEY_FILE".to_owned(), self.key_file.clone()),
            ("CALL_WORKER_POLL_SECONDS".to_owned(), "1".to_owned()),
        ]
    }

    /// The listener's address.
    pub fn ingress(&self) -> SocketAddr {
        self.ingress
    }

    /// An error when the stand-in has exited on its own.
    pub fn check(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait().context("check steward-demo-calls")? {
            bail!("steward-demo-calls exited on its own ({status})");
        }
        Ok(())
    }

    pub fn stop(&mut self) {
        crate::stop(&mut self.child);
    }
}

//! The demo mailbox for `cargo xtask dev --demo-mail` and the web client's browser tests:
//! `steward-demo-mail` (testkit's mail provider stand-in, filled with a few hundred
//! conversations) in a private directory, and the environment that connects its account to the
//! stack with Email mode on.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Child;

use anyhow::{Context, bail};

/// The running stand-in.
pub struct DemoMail {
    child: Child,
    dir: PathBuf,
    provider: Vec<(String, String)>,
}

/// Mail, Email mode, unsubscribe assistance and the junk filter on, the demo account's manifest
/// and evidence packet under `dir`, and the stand-in's addresses (`provider`: the provider, its
/// DNS server and the local unsubscribe endpoint).
fn environment(dir: &Path, provider: &[(String, String)]) -> Vec<(String, String)> {
    let mut environment = vec![
        ("AGENT_EMAIL_ENABLED".to_owned(), "1".to_owned()),
        ("AGENT_EMAIL_MODE_ENABLED".to_owned(), "1".to_owned()),
        ("AGENT_EMAIL_UNSUBSCRIBE_ENABLED".to_owned(), "1".to_owned()),
        (
            "MAIL_ACCOUNTS_FILE".to_owned(),
            dir.join("accounts.json").display().to_string(),
        ),
        // The junk filter, on the demo owner's reviewed packet (`testkit::demo::evidence`).
        ("AGENT_EMAIL_JUNK_FILTER_MODE".to_owned(), "filter".to_owned()),
        (
            "AGENT_EMAIL_JUNK_FILTER_EVIDENCE".to_owned(),
            dir.join("junk-evidence.json").display().to_string(),
        ),
    ];
    environment.extend(provider.iter().cloned());
    environment
}

impl DemoMail {
    /// Starts the stand-in writing its account under `dir` (made owner-only), and waits until it
    /// is ready.
    pub fn start(bin: &Path, dir: &Path) -> anyhow::Result<DemoMail> {
        let (child, provider) = crate::stand_in::start(bin, "steward-demo-mail", dir, &[])?;
        Ok(DemoMail {
            child,
            dir: dir.to_owned(),
            provider,
        })
    }

    /// The stack's environment for this demo ([`environment`]).
    pub fn environment(&self) -> Vec<(String, String)> {
        environment(&self.dir, &self.provider)
    }

    /// The environment of the demo already running under `dir` (started by `cargo xtask dev
    /// --demo-mail`), as [`DemoMail::environment`] gives it.
    pub fn environment_in(dir: &Path) -> anyhow::Result<Vec<(String, String)>> {
        let ready = dir.join("provider.env");
        let text = fs::read_to_string(&ready)
            .with_context(|| format!("read {} (is `cargo xtask dev --demo-mail` running?)", ready.display()))?;
        Ok(environment(dir, &crate::stand_in::variables(&text)))
    }

    /// An error when the stand-in has exited on its own.
    pub fn check(&mut self) -> anyhow::Result<()> {
        if let Some(status) = self.child.try_wait().context("check steward-demo-mail")? {
            bail!("steward-demo-mail exited on its own ({status})");
        }
        Ok(())
    }

    pub fn stop(&mut self) {
        crate::stop(&mut self.child);
    }
}

//! Makes sure PostgreSQL server binaries exist, installing Debian's package when we can.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};
use pgcluster::{Binaries, ClusterError};

const INSTALL: &str = "apt-get install -y --no-install-recommends postgresql";

pub fn ensure_binaries() -> anyhow::Result<Binaries> {
    match Binaries::locate() {
        Ok(binaries) => return Ok(binaries),
        Err(ClusterError::BinariesMissing) => {}
        Err(error) => return Err(error.into()),
    }
    let root = nix::unistd::Uid::effective().is_root();
    if !root || !Path::new("/usr/bin/apt-get").exists() {
        bail!("PostgreSQL server binaries were not found; install them with: sudo {INSTALL}");
    }
    eprintln!("xtask: PostgreSQL server binaries are missing; installing Debian's postgresql package");
    for args in [
        &["update"][..],
        &["install", "-y", "--no-install-recommends", "postgresql"][..],
    ] {
        let status = Command::new("apt-get")
            .args(args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .with_context(|| format!("run apt-get {}", args.join(" ")))?;
        if !status.success() {
            bail!(
                "apt-get {} failed ({status}); install PostgreSQL with: {INSTALL}",
                args.join(" ")
            );
        }
    }
    Binaries::locate().context("PostgreSQL was installed but its binaries are still not found")
}

/// Lets the roles run as root on a development machine (they refuse root otherwise).
pub const ALLOW_ROOT: (&str, &str) = ("STEWARD_DEV_ALLOW_ROOT", "1");

/// Provisions the logins and the database named by `admin_url` (an administrator's URL), then
/// migrates and applies the grants as the migration owner: what an operator does at deploy time.
pub fn prepare_database(bin: &Path, admin_url: &str) -> anyhow::Result<()> {
    let steps: [(&[&str], String, &str); 2] = [
        (
            &["provision"],
            admin_url.to_owned(),
            "provision the logins and the database",
        ),
        (&[], login_url(admin_url, "steward_owner"), "migrate and grant"),
    ];
    for (args, url, what) in steps {
        let status = Command::new(bin.join("steward-migrate"))
            .args(args)
            .env("DATABASE_URL", url)
            .env(ALLOW_ROOT.0, ALLOW_ROOT.1)
            .status()
            .with_context(|| format!("run steward-migrate to {what}"))?;
        if !status.success() {
            bail!("steward-migrate could not {what}");
        }
    }
    Ok(())
}

/// `admin_url` for `login` (each role connects with its own).
pub fn login_url(admin_url: &str, login: &str) -> String {
    pgcluster::with_user(admin_url, login)
}

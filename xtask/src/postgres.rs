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

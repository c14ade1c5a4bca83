//! Makes sure PostgreSQL server binaries (and the host tools the tests use) exist, installing
//! Debian's packages when we can.

use std::path::Path;
use std::process::Command;

use anyhow::{Context, bail};
use pgcluster::{Binaries, ClusterError};

pub fn ensure_binaries() -> anyhow::Result<Binaries> {
    match Binaries::locate() {
        Ok(binaries) => return Ok(binaries),
        Err(ClusterError::BinariesMissing) => {}
        Err(error) => return Err(error.into()),
    }
    install(&["postgresql"], "PostgreSQL server binaries")?;
    Binaries::locate().context("PostgreSQL was installed but its binaries are still not found")
}

/// The host tools the test suite drives: `systemd-analyze` (unit exposure scores),
/// `setfacl`/`getfacl` (ACL checks of secrets and preflight) and `Xvfb` (the hosted browser's
/// display; Chromium itself comes with the web client's tests and the hosted browser's demo,
/// [`ensure_chromium`]).
pub fn ensure_test_tools() -> anyhow::Result<()> {
    let on_path = |tool: &str| {
        std::env::var_os("PATH").is_some_and(|path| std::env::split_paths(&path).any(|dir| dir.join(tool).is_file()))
    };
    let mut packages = Vec::new();
    if !on_path("systemd-analyze") {
        packages.push("systemd");
    }
    if !on_path("setfacl") || !on_path("getfacl") {
        packages.push("acl");
    }
    if !Path::new("/usr/bin/Xvfb").exists() {
        packages.push("xvfb");
    }
    if packages.is_empty() {
        return Ok(());
    }
    install(&packages, "test tools")
}

/// Installs Debian `packages` with apt when we are root, else says how.
pub(crate) fn install(packages: &[&str], what: &str) -> anyhow::Result<()> {
    let command = format!("apt-get install -y --no-install-recommends {}", packages.join(" "));
    let root = nix::unistd::Uid::effective().is_root();
    if !root || !Path::new("/usr/bin/apt-get").exists() {
        bail!("{what} were not found; install them with: sudo {command}");
    }
    eprintln!("xtask: {what} are missing; installing {}", packages.join(", "));
    let mut install = vec!["install", "-y", "--no-install-recommends"];
    install.extend_from_slice(packages);
    for args in [vec!["update"], install] {
        let status = Command::new("apt-get")
            .args(&args)
            .env("DEBIAN_FRONTEND", "noninteractive")
            .status()
            .with_context(|| format!("run apt-get {}", args.join(" ")))?;
        if !status.success() {
            bail!(
                "apt-get {} failed ({status}); install them with: {command}",
                args.join(" ")
            );
        }
    }
    Ok(())
}

/// Lets the roles run as root on a development machine (they refuse root otherwise).
pub const ALLOW_ROOT: (&str, &str) = ("STEWARD_DEV_ALLOW_ROOT", "1");

/// Provisions the logins and the database named by `admin_url` (an administrator's URL), then
/// migrates and applies the grants as the migration owner: what an operator does at deploy time.
/// Of the stack's `flags`, `AGENT_CALL_NOTIFICATIONS_ENABLED` decides grants (the call worker's
/// enqueueing of `call_finished` notifications, the notify role's read of call ids), as in the
/// migration unit's environment.
pub fn prepare_database(bin: &Path, admin_url: &str, flags: &[(&str, &str)]) -> anyhow::Result<()> {
    let grants = flags
        .iter()
        .filter(|(name, _)| *name == "AGENT_CALL_NOTIFICATIONS_ENABLED")
        .copied();
    let steps: [(&[&str], String, &str); 2] = [
        (
            &["provision"],
            admin_url.to_owned(),
            "provision the logins and the database",
        ),
        (
            &[],
            pgcluster::with_user(admin_url, "steward_owner"),
            "migrate and grant",
        ),
    ];
    for (args, url, what) in steps {
        let status = Command::new(bin.join("steward-migrate"))
            .args(args)
            .env("DATABASE_URL", url)
            .env(ALLOW_ROOT.0, ALLOW_ROOT.1)
            .envs(grants.clone())
            .status()
            .with_context(|| format!("run steward-migrate to {what}"))?;
        if !status.success() {
            bail!("steward-migrate could not {what}");
        }
    }
    Ok(())
}

/// A PostgreSQL client program of the same installation as the server binaries: beside them,
/// beside what they link to (a directory of symlinks), or else on `PATH`.
pub fn client_tool(binaries: &pgcluster::Binaries, name: &str) -> std::path::PathBuf {
    let beside = binaries.dir().join(name);
    if beside.is_file() {
        return beside;
    }
    std::fs::canonicalize(binaries.dir().join("postgres"))
        .ok()
        .and_then(|server| Some(server.parent()?.join(name)))
        .filter(|tool| tool.is_file())
        .unwrap_or_else(|| name.into())
}

/// Runs SQL on `url` (the superuser's) with `psql`; the unaligned, tuples-only output, trimmed.
pub fn psql(binaries: &pgcluster::Binaries, url: &str, sql: &str) -> anyhow::Result<String> {
    let output = std::process::Command::new(client_tool(binaries, "psql"))
        .args(["-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-d", url, "-c", sql])
        .output()
        .context("run psql")?;
    if !output.status.success() {
        anyhow::bail!("psql failed: {}", String::from_utf8_lossy(&output.stderr).trim());
    }
    Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

/// Where Debian's package puts the browser.
pub(crate) const CHROMIUM: &str = "/usr/bin/chromium";

/// Debian's Chromium and a font for it to draw text with.
pub(crate) fn ensure_chromium() -> anyhow::Result<()> {
    let mut packages = Vec::new();
    if !Path::new(CHROMIUM).exists() {
        packages.push("chromium");
    }
    if !Path::new("/usr/share/fonts/truetype/dejavu").exists() {
        packages.push("fonts-dejavu-core");
    }
    if packages.is_empty() {
        return Ok(());
    }
    crate::postgres::install(&packages, "Chromium for the web client's tests")
}

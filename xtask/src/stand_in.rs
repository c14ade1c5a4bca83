//! Starting a provider stand-in from `testkit` (`steward-demo-mail`, `steward-demo-calls`): it
//! gets a fresh owner-only directory as its first argument and writes `provider.env` there,
//! renamed into place, once it is ready. Also how a local stack waits for a role's readiness
//! ([`wait_healthy`]).

use std::fs;
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::fs::OpenOptionsExt as _;
use std::path::Path;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};

/// `KEY=VALUE` lines, in order.
pub fn variables(text: &str) -> Vec<(String, String)> {
    text.lines()
        .filter_map(|line| line.split_once('='))
        .map(|(name, value)| (name.to_owned(), value.to_owned()))
        .collect()
}

/// Makes `dir` afresh (owner-only), starts `bin/name dir args…`, waits until its
/// `provider.env` appears and returns the stand-in with what that file names. A stand-in that
/// exits or is not ready within 60 seconds is an error (and is stopped).
pub fn start(bin: &Path, name: &str, dir: &Path, args: &[String]) -> anyhow::Result<(Child, Vec<(String, String)>)> {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    fs::set_permissions(dir, std::os::unix::fs::PermissionsExt::from_mode(0o700))
        .with_context(|| format!("chmod {}", dir.display()))?;
    let mut child = Command::new(bin.join(name))
        .arg(dir)
        .args(args)
        .spawn()
        .with_context(|| format!("start {name}"))?;
    let ready = dir.join("provider.env");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !ready.exists() {
        if let Some(status) = child.try_wait()? {
            bail!("{name} exited during startup ({status})");
        }
        if Instant::now() > deadline {
            crate::stop(&mut child);
            bail!("{name} was not ready within 60 seconds");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    match fs::read_to_string(&ready) {
        Ok(text) => Ok((child, variables(&text))),
        Err(error) => {
            crate::stop(&mut child);
            Err(error).context("read provider.env")
        }
    }
}

/// Polls `name`'s `GET /health/ready` on `listen` until it answers 200 or 204; `hint` follows
/// the error when the role exits first.
pub(crate) fn wait_healthy(name: &str, listen: SocketAddr, child: &mut Child, hint: &str) -> anyhow::Result<()> {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        if let Some(status) = child.try_wait()? {
            bail!("{name} exited during startup ({status}){hint}");
        }
        if health_status(listen).is_some_and(|status| status == 200 || status == 204) {
            return Ok(());
        }
        if Instant::now() > deadline {
            bail!("{name} did not become ready within 60 seconds");
        }
        std::thread::sleep(Duration::from_millis(100));
    }
}

fn health_status(listen: SocketAddr) -> Option<u16> {
    let mut stream = TcpStream::connect_timeout(&listen, Duration::from_secs(1)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream
        .write_all(b"GET /health/ready HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n")
        .ok()?;
    let mut head = [0u8; 12];
    stream.read_exact(&mut head).ok()?;
    std::str::from_utf8(&head[9..12]).ok()?.parse().ok()
}

/// Writes `contents` readable by the owner only: the database URL may hold a password.
pub(crate) fn write_private(path: &Path, contents: impl AsRef<[u8]>) -> std::io::Result<()> {
    let _ = fs::remove_file(path);
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    file.write_all(contents.as_ref())
}

//! `steward-preflight`: the host preflight as an installed binary (`cargo xtask preflight` runs
//! the same). Run it as the unprivileged deploy user before (re)starting roles; it prints one
//! `OK` or `FAIL` line per check, then the verdict, and exits 1 when any check failed.
//!
//! Usage: `steward-preflight [--config-dir DIR] [--credentials-dir DIR] [--release DIR]
//! [--service-user NAME] [--service-group NAME] [--ingress-user NAME] [--units-dir DIR]`
//! (defaults: `/etc/steward`, `/etc/steward/credentials`, `/opt/steward/current`, `steward`,
//! `steward`, `steward-ingress`, `/etc/systemd/system`).
//!
//! `steward-preflight --generate-vapid-key PATH` writes a fresh VAPID key for Web Push (owner-only,
//! never over an existing file) and `--vapid-public-key PATH` reads one; both print the api's
//! `WEB_PUSH_PUBLIC_KEY=<key>` line.

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: steward-preflight [--config-dir DIR] [--credentials-dir DIR] [--release DIR] \
[--service-user NAME] [--service-group NAME] [--ingress-user NAME] [--units-dir DIR]";

fn host(args: impl IntoIterator<Item = String>) -> Result<preflight::Host, String> {
    let mut host = preflight::Host::default();
    let mut credentials_dir = None;
    let mut args = args.into_iter();
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value; {USAGE}"));
        match flag.as_str() {
            "--config-dir" => host.config_dir = PathBuf::from(value()?),
            "--credentials-dir" => credentials_dir = Some(PathBuf::from(value()?)),
            "--release" => host.release = PathBuf::from(value()?),
            "--service-user" => host.service_user = value()?,
            "--service-group" => host.service_group = value()?,
            "--ingress-user" => host.ingress_user = value()?,
            "--units-dir" => host.units_dir = PathBuf::from(value()?),
            other => return Err(format!("unknown argument `{other}`; {USAGE}")),
        }
    }
    host.credentials_dir = credentials_dir.unwrap_or_else(|| host.config_dir.join("credentials"));
    Ok(host)
}

fn main() -> ExitCode {
    if std::env::args().nth(1).as_deref() == Some("--version") {
        println!("{}", release::version_line("steward-preflight"));
        return ExitCode::SUCCESS;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let [flag, path] = args.as_slice()
        && (flag == "--generate-vapid-key" || flag == "--vapid-public-key")
    {
        let path = std::path::Path::new(path);
        let key = if flag == "--generate-vapid-key" {
            preflight::vapid::generate(path)
        } else {
            preflight::vapid::public_key(path)
        };
        return match key {
            Ok(key) => {
                println!("WEB_PUSH_PUBLIC_KEY={key}");
                ExitCode::SUCCESS
            }
            Err(error) => {
                eprintln!("steward-preflight: {error}");
                ExitCode::FAILURE
            }
        };
    }
    let host = match host(args) {
        Ok(host) => host,
        Err(error) => {
            eprintln!("steward-preflight: {error}");
            return ExitCode::from(2);
        }
    };
    let report = preflight::run(&host);
    print!("{}", report.render());
    if report.passed() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

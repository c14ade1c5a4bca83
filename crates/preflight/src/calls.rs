//! Calling's configuration file: `{config_dir}/callprov-configuration.json`, valid, and
//! writable by its owner only; named alike by the worker (which pins approvals to its revision)
//! and the call worker (which pushes it to the number and dispatches under it).

use std::io::ErrorKind;
use std::os::unix::fs::MetadataExt;

use crate::{Environments, Host, Report, flag_on, value};

/// The file's name in the configuration directory (the spec's path).
pub(crate) const CONFIGURATION: &str = "callprov-configuration.json";

pub(crate) fn configuration(host: &Host, environments: &Environments, report: &mut Report) {
    let on: Vec<&str> = ["worker", "call-worker"]
        .into_iter()
        .filter(|role| {
            environments
                .get(role)
                .is_some_and(|env| flag_on(env, "AGENT_CALL_ENABLED"))
        })
        .collect();
    if on.is_empty() {
        return;
    }
    let mut failures = Vec::new();
    let named: Vec<(&str, String)> = on
        .iter()
        .map(|role| {
            let path = environments
                .get(role)
                .map(|env| value(env, "CALLPROV_CONFIGURATION_FILE"))
                .unwrap_or_default();
            (*role, path.to_owned())
        })
        .collect();
    for (role, path) in &named {
        if path.is_empty() {
            failures.push(format!("{role}.env has calling on but no CALLPROV_CONFIGURATION_FILE"));
        }
    }
    if let [(first, a), (second, b)] = named.as_slice()
        && !a.is_empty()
        && !b.is_empty()
        && a != b
    {
        failures.push(format!(
            "CALLPROV_CONFIGURATION_FILE differs between {first} and {second}"
        ));
    }
    let path = host.config_dir.join(CONFIGURATION);
    match std::fs::symlink_metadata(&path) {
        Err(error) if error.kind() == ErrorKind::NotFound => {
            failures.push(format!("{} is missing", path.display()));
        }
        Err(error) => failures.push(format!("{} cannot be inspected: {error}", path.display())),
        Ok(meta) if meta.file_type().is_symlink() => {
            failures.push(format!("{} is a symbolic link", path.display()));
        }
        Ok(meta) if !meta.file_type().is_file() => failures.push(format!("{} is not a regular file", path.display())),
        Ok(meta) if meta.mode() & 0o022 != 0 => failures.push(format!(
            "{} must be writable by its owner only (mode {:04o})",
            path.display(),
            meta.mode() & 0o7777
        )),
        Ok(_) => match std::fs::read(&path) {
            Err(error) if error.kind() == ErrorKind::PermissionDenied => {
                failures.push(format!("{} is not readable by the deploy user", path.display()));
            }
            Err(error) => failures.push(format!("{} cannot be read: {error}", path.display())),
            Ok(bytes) => {
                if let Err(error) = domain::call::CallConfiguration::parse(&bytes) {
                    failures.push(error.to_string());
                }
            }
        },
    }
    report.check(
        "call configuration is valid, writable by its owner only, and named alike by worker and call-worker",
        failures,
    );
}

//! Role binaries run as real processes: what every role must refuse at start.

use std::process::Command;

/// Starts the role binary at `program` once for every flag this release does not support
/// (`domain::flags::UNSUPPORTED`), each time with only `base` and that flag turned on, and checks
/// that it exits at start with status 2 and one line naming the flag and saying this release does
/// not support it.
pub fn assert_refuses_unsupported_flags(program: &str, base: &[(&str, &str)]) {
    let role = std::path::Path::new(program)
        .file_name()
        .and_then(|name| name.to_str())
        .expect("a binary path");
    for (variable, part) in domain::flags::UNSUPPORTED {
        let on = "1";
        let output = Command::new(program)
            .env_clear()
            .env("PATH", "/usr/bin:/bin")
            .envs(base.iter().copied())
            .env(variable, on)
            .output()
            .unwrap_or_else(|error| panic!("run {program}: {error}"));
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{role} with {variable}={on}: {stderr}");
        assert_eq!(
            stderr.trim_end(),
            format!("{role}: {variable} is set to `{on}`: this release does not support {part}"),
            "{role} with {variable}={on}"
        );
    }
}

/// Starts the daemon role binary at `program` with `LOG_LEVEL=verbose` (and nothing else but
/// `STEWARD_DEV_ALLOW_ROOT=1`): it must exit at start with status 2 and one line naming
/// `LOG_LEVEL`, before it reads anything of its own.
pub fn assert_refuses_an_unknown_log_level(program: &str) {
    let role = std::path::Path::new(program)
        .file_name()
        .and_then(|name| name.to_str())
        .expect("a binary path");
    let output = Command::new(program)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("STEWARD_DEV_ALLOW_ROOT", "1")
        .env("LOG_LEVEL", "verbose")
        .output()
        .unwrap_or_else(|error| panic!("run {program}: {error}"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{role}: {stderr}");
    assert_eq!(
        stderr.trim_end(),
        format!("{role}: LOG_LEVEL is invalid: `verbose` is not one of error, warn, info, debug, trace"),
    );
}

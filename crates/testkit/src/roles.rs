//! Role binaries run as real processes: what every role must refuse at start.

use std::process::Command;

/// Starts the role binary at `program` with an inline call-provider key in its environment
/// (`CALLPROV_API_KEY`, which every role refuses: the key lives in a file) and checks that it
/// exits at start with status 2 and one line naming the variable, before anything else.
pub fn assert_refuses_an_inline_call_provider_key(program: &str) {
    let role = std::path::Path::new(program)
        .file_name()
        .and_then(|name| name.to_str())
        .expect("a binary path");
    let output = Command::new(program)
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .env("CALLPROV_API_KEY", "ck_test")
        .output()
        .unwrap_or_else(|error| panic!("run {program}: {error}"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{role}: {stderr}");
    assert_eq!(
        stderr.trim_end(),
        format!(
            "{role}: CALLPROV_API_KEY is set: an inline call-provider key is refused; put it in a file and set CALLPROV_API_KEY_FILE"
        ),
    );
    assert!(!stderr.contains("ck_test"), "the key's value is never echoed");
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

/// A role process a test started, killed and reaped when dropped (a failed assertion leaves no
/// process behind).
#[derive(Debug)]
pub struct Process(pub std::process::Child);

impl Drop for Process {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

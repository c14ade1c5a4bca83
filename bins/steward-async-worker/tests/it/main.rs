//! The async worker as it starts: an unknown log level stops it, as it stops every role (Email
//! mode's refresh and assessment are tested in `crates/email`).

#[test]
fn an_unknown_log_level_stops_it_at_start() {
    // LOG_LEVEL is every role's, read by `role::main` before the role's own configuration.
    testkit::roles::assert_refuses_an_unknown_log_level(env!("CARGO_BIN_EXE_steward-async-worker"));
}

/// Runs the binary with `args` and nothing in its environment; (status, stderr).
fn run(args: &[&str]) -> (Option<i32>, String) {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_steward-async-worker"))
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .args(args)
        .output()
        .expect("run");
    (
        output.status.code(),
        String::from_utf8_lossy(&output.stderr).trim_end().to_owned(),
    )
}

#[test]
fn the_calibration_commands_refuse_a_missing_bound_or_an_unknown_command_in_one_line() {
    let (status, stderr) = run(&["calibrate", "--max-threads", "100", "--out", "/tmp/never.json"]);
    assert_eq!(status, Some(2));
    assert!(
        stderr.starts_with("steward-async-worker calibrate: --max-cost-usd is required"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1);
    assert!(!std::path::Path::new("/tmp/never.json").exists());
    let (status, stderr) = run(&["calibrate", "--max-threads", "0", "--max-cost-usd", "1", "--out", "x"]);
    assert_eq!(status, Some(2));
    assert!(
        stderr.contains("--max-threads must be a whole number from 1 to 2000"),
        "{stderr}"
    );
    let (status, stderr) = run(&["junk-packet", "--review", "a.json"]);
    assert_eq!(status, Some(2));
    assert!(
        stderr.starts_with("steward-async-worker junk-packet: --out is required"),
        "{stderr}"
    );
    let (status, stderr) = run(&["replay"]);
    assert_eq!(status, Some(2));
    assert!(stderr.contains("unknown command `replay`"), "{stderr}");
}

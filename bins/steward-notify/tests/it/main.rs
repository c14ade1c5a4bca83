//! The notify role: delivery against a real HTTP/2 TLS server speaking the APNs provider API and
//! a real HTTPS push service speaking Web Push, and crash safety of the role binary.

mod crash;
mod support_and_delivery;
mod web_push;

#[test]
fn an_unknown_log_level_stops_it_at_start() {
    // LOG_LEVEL is every role's, read by `role::main` before the role's own configuration.
    testkit::roles::assert_refuses_an_unknown_log_level(env!("CARGO_BIN_EXE_steward-notify"));
}

/// `steward-notify` run with delivery on and `more` of the environment, until it exits.
fn run_notify(more: &[(&str, &std::ffi::OsStr)]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_steward-notify"))
        .env_clear()
        .env("DATABASE_URL", "postgres://steward_notify@localhost/steward")
        .env("STEWARD_DEV_ALLOW_ROOT", "1")
        .env("AGENT_NOTIFICATION_API_ENABLED", "1")
        .env("AGENT_NOTIFICATION_DISPATCH_ENABLED", "1")
        .envs(more.iter().copied())
        .output()
        .expect("run steward-notify")
}

#[test]
fn without_a_push_provider_it_refuses_to_start_with_one_line() {
    let output = run_notify(&[("APNS_TOPIC", "".as_ref())]);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("no push provider is configured: set APNS_TOPIC (APNs) or WEB_PUSH_SUBJECT (Web Push)"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

#[test]
fn a_vapid_key_that_is_not_p256_stops_it_at_start() {
    let dir = std::env::temp_dir().join(format!("steward-notify-vapid-{}", uuid::Uuid::new_v4().simple()));
    std::fs::create_dir(&dir).expect("dir");
    let key = dir.join("vapid.pem");
    std::fs::write(
        &key,
        "-----BEGIN PRIVATE KEY-----\nbm90IGEga2V5\n-----END PRIVATE KEY-----\n",
    )
    .expect("write");
    std::fs::set_permissions(&key, std::os::unix::fs::PermissionsExt::from_mode(0o600)).expect("mode");
    let output = run_notify(&[
        ("WEB_PUSH_SUBJECT", "mailto:owner@example.test".as_ref()),
        ("WEB_PUSH_VAPID_KEY_FILE", key.as_os_str()),
    ]);
    let _ = std::fs::remove_dir_all(&dir);
    assert!(!output.status.success());
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("the VAPID key is not a P-256 PKCS#8 PEM private key"),
        "{stderr}"
    );
}

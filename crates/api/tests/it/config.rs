//! Startup configuration: the token file, scopes and flags are checked before anything serves.

use domain::env::FromEnv as _;
use std::collections::HashMap;

use api::config::ConfigError;

use crate::support::{random_token, write_file};

fn parse(vars: &[(&str, &str)]) -> Result<api::ApiConfig, ConfigError> {
    let map: HashMap<String, String> = vars.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    api::ApiConfig::from_env(|name| map.get(name).cloned())
}

#[test]
fn token_file_must_exist_be_owner_only_regular_and_long_enough() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = write_file(dir.path(), "good", &random_token(), 0o600);
    let good = good.to_str().expect("utf-8 path");
    let base = [("DATABASE_URL", "postgres://x@localhost/db")];
    let with = |path: &str| {
        let mut vars = base.to_vec();
        vars.push(("API_TOKEN_FILE", path));
        parse(&vars)
    };
    assert!(with(good).is_ok());
    let bad_url = parse(&[
        ("DATABASE_URL", "postgres://user:hunter2@host:notaport/db"),
        ("API_TOKEN_FILE", good),
    ]);
    let error = bad_url.expect_err("malformed url");
    assert!(error.to_string().starts_with("DATABASE_URL is invalid"), "{error}");
    assert!(
        !error.to_string().contains("hunter2"),
        "the password is never echoed: {error}"
    );

    assert!(matches!(
        parse(&base),
        Err(ConfigError::Env(domain::env::EnvError::Missing("API_TOKEN_FILE")))
    ));
    let missing = dir.path().join("absent");
    assert!(
        with(missing.to_str().expect("path"))
            .expect_err("missing")
            .to_string()
            .contains("does not exist")
    );

    let shared = write_file(dir.path(), "shared", &random_token(), 0o640);
    let error = with(shared.to_str().expect("path")).expect_err("group-readable token");
    assert!(error.to_string().contains("owner-only"), "{error}");

    let link = dir.path().join("link");
    std::os::unix::fs::symlink(good, &link).expect("symlink");
    assert!(
        with(link.to_str().expect("path"))
            .expect_err("symlink")
            .to_string()
            .contains("symbolic link")
    );

    let short = write_file(dir.path(), "short", "0123456789abcdef0123456789abcde\n", 0o600);
    assert!(matches!(
        with(short.to_str().expect("path")),
        Err(ConfigError::TokenTooShort)
    ));

    let spaced = write_file(dir.path(), "spaced", "0123456789abcdef 0123456789abcdef", 0o600);
    assert!(matches!(
        with(spaced.to_str().expect("path")),
        Err(ConfigError::TokenCharacters)
    ));
}

#[test]
fn scopes_and_flags_are_validated() {
    let dir = tempfile::tempdir().expect("tempdir");
    let token = write_file(dir.path(), "token", &random_token(), 0o600);
    let token = token.to_str().expect("utf-8 path");
    let base = vec![("DATABASE_URL", "postgres://x@localhost/db"), ("API_TOKEN_FILE", token)];
    let with = |extra: &[(&'static str, &'static str)]| {
        let mut vars = base.clone();
        vars.extend_from_slice(extra);
        parse(&vars)
    };

    let error = with(&[("AUTH_SCOPES", "sessions.read,sessions.admin")]).expect_err("unknown scope");
    assert_eq!(error.to_string(), "AUTH_SCOPES names unknown scope `sessions.admin`");

    let error = with(&[("AGENT_EMAIL_ENABLED", "yes")]).expect_err("non-boolean flag");
    assert_eq!(error.to_string(), "AGENT_EMAIL_ENABLED must be 0 or 1, got `yes`");

    let memory = with(&[("AGENT_MEMORY_API_ENABLED", "1")]).expect("Memory and People are built");
    assert!(memory.flags.is_on(domain::flags::Flag::MemoryApi));

    let error = with(&[("AGENT_NOTIFICATION_DISPATCH_ENABLED", "1")]).expect_err("unequal notification flags");
    assert!(error.to_string().contains("must hold the same value"), "{error}");

    let error = with(&[("API_LISTEN_ADDR", "localhost")]).expect_err("bad address");
    assert!(error.to_string().starts_with("API_LISTEN_ADDR is invalid"), "{error}");

    // The release identity is the build's: the variable that once named it is refused, not ignored.
    let error = with(&[("AGENT_RELEASE", "2026.11.21")]).expect_err("a configured release");
    assert!(
        error
            .to_string()
            .starts_with("AGENT_RELEASE is invalid: is no longer read"),
        "{error}"
    );
    let error = with(&[("API_UPLOAD_IDLE_SECONDS", "0")]).expect_err("zero timeout");
    assert!(
        error.to_string().starts_with("API_UPLOAD_IDLE_SECONDS is invalid"),
        "{error}"
    );

    let config = with(&[("AUTH_SCOPES", "sessions.read"), ("API_MAX_ARTIFACT_BYTES", "1000")]).expect("valid");
    assert_eq!(config.artifact_max_bytes, 1000);
    assert_eq!(config.authenticator.scopes().to_list(), "sessions.read");
    assert!(config.agents.get("default").is_some());
}

#[test]
fn agent_definitions_come_from_the_configured_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let token = write_file(dir.path(), "token", &random_token(), 0o600);
    let agents = write_file(
        dir.path(),
        "agents.json",
        r#"[{"id": "mail-helper", "instructions": "Help with mail.", "model": {"provider": "scripted", "model": "scripted-1"}}]"#,
        0o644,
    );
    let config = parse(&[
        ("DATABASE_URL", "postgres://x@localhost/db"),
        ("API_TOKEN_FILE", token.to_str().expect("path")),
        ("AGENT_DEFINITIONS_FILE", agents.to_str().expect("path")),
    ])
    .expect("valid");
    assert!(config.agents.get("mail-helper").is_some());
    assert!(config.agents.get("default").is_none());

    let broken = write_file(
        dir.path(),
        "broken.json",
        r#"[{"id": "x", "instructions": "y"}]"#,
        0o644,
    );
    let error = parse(&[
        ("DATABASE_URL", "postgres://x@localhost/db"),
        ("API_TOKEN_FILE", token.to_str().expect("path")),
        ("AGENT_DEFINITIONS_FILE", broken.to_str().expect("path")),
    ])
    .expect_err("definition without a model");
    assert!(error.to_string().starts_with("AGENT_DEFINITIONS_FILE:"), "{error}");
}

#[test]
fn the_web_origin_is_https_or_loopback() {
    let dir = tempfile::tempdir().expect("tempdir");
    let token = write_file(dir.path(), "token", &random_token(), 0o600);
    let token = token.to_str().expect("utf-8 path");
    let with = |origin: &str| {
        parse(&[
            ("DATABASE_URL", "postgres://x@localhost/db"),
            ("API_TOKEN_FILE", token),
            ("API_WEB_ORIGIN", origin),
        ])
    };
    for good in ["https://steward.example", "http://127.0.0.1:8080", ""] {
        assert!(with(good).is_ok(), "{good}");
    }
    for bad in [
        "http://steward.example",
        "https://steward.example/app",
        "steward.example",
    ] {
        let error = with(bad).expect_err("refused");
        assert!(error.to_string().starts_with("API_WEB_ORIGIN"), "{bad}: {error}");
    }
}

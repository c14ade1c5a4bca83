//! `steward-api` as a real process: what it refuses before it starts, and the release identity
//! it reports, which is the build's.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use testkit::TestDatabase;
use testkit::roles::Process;

#[test]
fn an_unknown_log_level_stops_it_at_start() {
    // LOG_LEVEL is every role's, read by `role::main` before the role's own configuration.
    testkit::roles::assert_refuses_an_unknown_log_level(env!("CARGO_BIN_EXE_steward-api"));
}

#[test]
fn version_prints_the_builds_release_identity() {
    let output = Command::new(env!("CARGO_BIN_EXE_steward-api"))
        .arg("--version")
        .env_clear()
        .output()
        .expect("run steward-api --version");
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        format!("steward-api {}\n", release::IDENTITY)
    );
    assert!(
        release::IDENTITY.starts_with(concat!(env!("CARGO_PKG_VERSION"), "+")),
        "{}",
        release::IDENTITY
    );
}

#[tokio::test]
async fn readiness_and_release_txt_carry_the_builds_release_identity() {
    let db = TestDatabase::new().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let token_file = dir.path().join("api-token");
    testkit::write_private(&token_file, &format!("{}\n", "t".repeat(40)));
    let mut process = Process(
        Command::new(env!("CARGO_BIN_EXE_steward-api"))
            .env_clear()
            .env("DATABASE_URL", db.url_as("api"))
            .env("API_TOKEN_FILE", &token_file)
            .env("API_LISTEN_ADDR", "127.0.0.1:0")
            .env("STEWARD_DEV_ALLOW_ROOT", "1")
            .env("LOG_LEVEL", "info")
            .env("NO_COLOR", "1")
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start steward-api"),
    );
    let stdout = process.0.stdout.take().expect("stdout");
    // The port the system gave it, from its first line.
    let address = BufReader::new(stdout)
        .lines()
        .map_while(Result::ok)
        .find_map(|line| {
            line.contains("steward-api listening")
                .then(|| line.split("addr=").nth(1)?.split_whitespace().next().map(str::to_owned))
                .flatten()
        })
        .expect("the listening line");
    let client = reqwest::Client::new();
    let ready = client
        .get(format!("http://{address}/health/ready"))
        .send()
        .await
        .expect("readiness");
    assert_eq!(ready.status(), 200);
    assert_eq!(ready.headers()["steward-release"], release::IDENTITY);
    for path in ["/site/release.txt", "/docs/release.txt"] {
        let text = client
            .get(format!("http://{address}{path}"))
            .send()
            .await
            .expect(path)
            .text()
            .await
            .expect("text");
        assert_eq!(text, format!("{}\n", release::IDENTITY), "{path}");
    }
}

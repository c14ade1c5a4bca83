//! The call-ingress listener: its routes served in process (signed webhooks become receipts,
//! everything else is refused with a problem document), and the binary as a real process, which
//! refuses every environment it must refuse before it starts, and, with calling on, serves
//! hardened and reports readiness to systemd.

use std::io::Read;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use hmac::{Hmac, Mac};
use serde_json::Value;
use sha2::Sha256;
use testkit::TestDatabase;
use testkit::roles::Process;

const SECRET: &str = "test-signing-secret-0123456789abcdef";

/// A listener on 127.0.0.1: its routes in process with the ingress login, or the real process.
struct Listener {
    /// The in-process server, or none for a listener process.
    _server: Option<testkit::Served>,
    base: String,
    client: reqwest::Client,
}

fn write_secret(dir: &Path, contents: &str, mode: u32) -> PathBuf {
    let path = dir.join("webhook-secret");
    std::fs::write(&path, contents).expect("write the secret");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).expect("chmod");
    path
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("free port")
        .port()
}

/// The listener's command with a clean environment: exactly `variables`, plus `WATCHDOG_PID`
/// naming the listener itself as systemd would (a shell exports its own pid, then execs).
fn command(variables: &[(&str, String)]) -> Command {
    let mut command = Command::new("/bin/sh");
    command
        .args([
            "-c",
            r#"WATCHDOG_PID=$$ exec "$0""#,
            env!("CARGO_BIN_EXE_steward-call-ingress"),
        ])
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .envs(variables.iter().map(|(name, value)| (*name, value.as_str())))
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped());
    command
}

fn base_environment(db: &TestDatabase, secret: &Path, port: u16) -> Vec<(&'static str, String)> {
    vec![
        ("DATABASE_URL", db.url_as("ingress")),
        ("AGENT_CALL_INGRESS_ENABLED", "1".into()),
        ("CALLPROV_WEBHOOK_SECRET_FILE", secret.display().to_string()),
        ("CALL_INGRESS_LISTEN_ADDR", format!("127.0.0.1:{port}")),
        ("STEWARD_DEV_ALLOW_ROOT", "1".into()),
        ("LOG_LEVEL", "warn".into()),
    ]
}

async fn start(db: &TestDatabase) -> Listener {
    let app = steward_call_ingress::app(db.store_as("ingress").await, SECRET.as_bytes().to_vec());
    let served = testkit::serve(app).await;
    let listener = Listener {
        base: served.url(""),
        _server: Some(served),
        client: reqwest::Client::new(),
    };
    let ready = listener
        .client
        .get(format!("{}/health/ready", listener.base))
        .send()
        .await
        .expect("ready");
    assert_eq!(ready.status(), 204, "ready");
    listener
}

fn sign(secret: &str, body: &[u8]) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).expect("key");
    mac.update(body);
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

impl Listener {
    async fn deliver(&self, body: &[u8], signature: Option<&str>) -> reqwest::Response {
        let mut request = self
            .client
            .post(format!("{}/webhooks/callprov", self.base))
            .header("content-type", "application/json")
            .body(body.to_vec());
        if let Some(signature) = signature {
            request = request.header("x-webhook-signature", signature);
        }
        request.send().await.expect("send")
    }
}

async fn expect_problem(response: reqwest::Response, status: u16, code: &str) {
    assert_eq!(response.status(), status);
    assert_eq!(response.headers()["content-type"], "application/problem+json");
    let body: Value = response.json().await.expect("problem body");
    assert_eq!(body["code"], code, "{body}");
}

async fn receipts(db: &TestDatabase) -> Vec<(String, String, i32)> {
    sqlx::query_as("SELECT kind, provider_call_id, deliveries FROM call_records ORDER BY provider_call_id")
        .fetch_all(&db.pool)
        .await
        .expect("receipts")
}

#[tokio::test]
async fn a_signed_delivery_queues_one_receipt_and_repeats_count_up() {
    let db = TestDatabase::new().await;
    let listener = start(&db).await;
    let body = br#"{"call_id": "call_8f2e", "transcript": "never stored"}"#;
    let signature = sign(SECRET, body);
    for _ in 0..2 {
        assert_eq!(listener.deliver(body, Some(&signature)).await.status(), 204);
    }
    assert_eq!(receipts(&db).await, [("receipt".to_owned(), "call_8f2e".to_owned(), 2)]);
}

#[tokio::test]
async fn unsigned_missigned_and_malformed_deliveries_are_refused_and_store_nothing() {
    let db = TestDatabase::new().await;
    let listener = start(&db).await;
    let body = br#"{"call_id": "call_1"}"#;
    let good = sign(SECRET, body);
    let refused: [(&str, Option<String>); 5] = [
        ("no signature", None),
        ("another secret", Some(sign("another-secret-0123456789", body))),
        ("uppercase hex", Some(good.to_uppercase())),
        ("truncated", Some(good[..63].to_owned())),
        ("another body", Some(sign(SECRET, br#"{"call_id": "call_2"}"#))),
    ];
    for (case, signature) in refused {
        let response = listener.deliver(body, signature.as_deref()).await;
        assert_eq!(response.status(), 401, "{case}");
        expect_problem(response, 401, "webhook_signature_invalid").await;
    }
    for bad in [
        &b"not json"[..],
        br#"{"id": "x"}"#,
        br#"{"call_id": "../etc"}"#,
        br#"{"call_id": ""}"#,
    ] {
        expect_problem(
            listener.deliver(bad, Some(&sign(SECRET, bad))).await,
            400,
            "webhook_body_invalid",
        )
        .await;
    }
    let large = vec![b' '; 65 * 1024];
    expect_problem(
        listener.deliver(&large, Some(&sign(SECRET, &large))).await,
        413,
        "payload_too_large",
    )
    .await;
    let other = listener
        .client
        .get(format!("{}/v1/sessions", listener.base))
        .send()
        .await
        .expect("send");
    expect_problem(other, 404, "not_found").await;
    let wrong_method = listener
        .client
        .get(format!("{}/webhooks/callprov", listener.base))
        .send()
        .await
        .expect("send");
    expect_problem(wrong_method, 405, "method_not_allowed").await;
    assert!(receipts(&db).await.is_empty());
}

#[tokio::test]
async fn the_listener_does_not_start_without_calling() {
    // The spec's flag table: ingress requires calling (nothing would settle its receipts).
    let line = refused_with(&[]).await;
    assert!(
        line.contains("AGENT_CALL_INGRESS_ENABLED requires AGENT_CALL_ENABLED=1"),
        "{line}"
    );
}

#[tokio::test]
async fn the_running_listener_is_hardened_tells_systemd_it_is_ready_and_queues_receipts() {
    use std::os::unix::net::UnixDatagram;
    let db = TestDatabase::new().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let secret = write_secret(dir.path(), &format!("{SECRET}\n"), 0o600);
    let socket_path = dir.path().join("notify.sock");
    let socket = UnixDatagram::bind(&socket_path).expect("bind the notify socket");
    socket.set_read_timeout(Some(Duration::from_secs(20))).expect("timeout");
    let port = free_port();
    let mut variables = base_environment(&db, &secret, port);
    variables.extend([
        ("AGENT_CALL_ENABLED", "1".to_owned()),
        ("NOTIFY_SOCKET", socket_path.display().to_string()),
        ("WATCHDOG_USEC", "200000".to_owned()),
    ]);
    let child = Process(command(&variables).spawn().expect("start the listener"));
    let mut messages = Vec::new();
    let mut buffer = [0u8; 256];
    while !messages.iter().any(|m: &String| m.contains("WATCHDOG=1")) {
        let length = socket.recv(&mut buffer).expect("a notification");
        messages.push(String::from_utf8_lossy(&buffer[..length]).into_owned());
    }
    assert!(messages[0].contains("READY=1"), "{messages:?}");

    let status = std::fs::read_to_string(format!("/proc/{}/status", child.0.id())).expect("status");
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .map(str::trim)
            .unwrap_or_else(|| panic!("{name} in {status}"))
            .to_owned()
    };
    assert_eq!(field("Umask:"), "0027");
    assert_eq!(field("NoNewPrivs:"), "1");
    for set in ["CapInh:", "CapPrm:", "CapEff:", "CapAmb:"] {
        assert_eq!(field(set), "0000000000000000", "{set}");
    }

    let listener = Listener {
        _server: None,
        base: format!("http://127.0.0.1:{port}"),
        client: reqwest::Client::new(),
    };
    let body = br#"{"call_id": "call-from-the-process", "status": "completed"}"#;
    let response = listener.deliver(body, Some(&sign(SECRET, body))).await;
    assert_eq!(response.status(), 204);
    assert_eq!(receipts(&db).await.len(), 1);
}

/// Runs the listener with `variables` and expects it to refuse to start: exit status 2 and one
/// line on stderr, which is returned.
fn refusal(variables: &[(&str, String)]) -> String {
    let mut child = command(variables).spawn().expect("start");
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("the listener started although it should have refused: {variables:?}");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut stderr)
        .expect("read");
    assert_eq!(status.code(), Some(2), "{stderr}");
    assert_eq!(stderr.trim_end().lines().count(), 1, "one line: {stderr}");
    assert!(stderr.starts_with("steward-call-ingress: "), "{stderr}");
    stderr
}

/// A complete, valid environment plus `extra` (which may override).
async fn refused_with(extra: &[(&'static str, &str)]) -> String {
    let db = TestDatabase::new().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let secret = write_secret(dir.path(), SECRET, 0o600);
    let mut variables = base_environment(&db, &secret, free_port());
    for (name, value) in extra {
        variables.retain(|(existing, _)| existing != name);
        variables.push((name, (*value).to_owned()));
    }
    refusal(&variables)
}

#[tokio::test]
async fn refuses_a_model_api_key() {
    let line = refused_with(&[("OPENAI_API_KEY", "sk-test")]).await;
    assert!(
        line.contains("OPENAI_API_KEY is set: a call role never holds a model key"),
        "{line}"
    );
}

#[tokio::test]
async fn refuses_a_model_key_variable() {
    let line = refused_with(&[("VEETBOT_OPENAI_KEY", "sk-test")]).await;
    assert!(line.contains("VEETBOT_OPENAI_KEY is set"), "{line}");
}

#[tokio::test]
async fn refuses_a_model_key_file() {
    let line = refused_with(&[("OPENAI_API_KEY_FILE", "/etc/steward/model-key")]).await;
    assert!(
        line.contains("OPENAI_API_KEY_FILE is set: a call role never holds a model key"),
        "{line}"
    );
}

#[tokio::test]
async fn refuses_the_browser_control_plane_credential() {
    let line = refused_with(&[("BROWSER_CONTROL_CREDENTIAL_FILE", "/etc/steward/browser")]).await;
    assert!(line.contains("BROWSER_CONTROL_CREDENTIAL_FILE is set"), "{line}");
}

#[tokio::test]
async fn refuses_the_call_provider_key_file() {
    let line = refused_with(&[("CALLPROV_API_KEY_FILE", "/etc/steward/callprov/api-key")]).await;
    assert!(
        line.contains("CALLPROV_API_KEY_FILE is set: the ingress listener never holds the call-provider API key"),
        "{line}"
    );
}

#[tokio::test]
async fn refuses_an_inline_call_provider_key() {
    let line = refused_with(&[("CALLPROV_API_KEY", "inline")]).await;
    assert!(
        line.contains("CALLPROV_API_KEY is set: an inline call-provider key is refused"),
        "{line}"
    );
}

#[tokio::test]
async fn refuses_the_owner_bearer() {
    let line = refused_with(&[("API_TOKEN_FILE", "/etc/steward/api-token")]).await;
    assert!(
        line.contains("API_TOKEN_FILE is set: a call role never holds the owner's bearer token"),
        "{line}"
    );
}

#[tokio::test]
async fn refuses_scopes() {
    let line = refused_with(&[("AUTH_SCOPES", "call.read")]).await;
    assert!(line.contains("AUTH_SCOPES is set: a call role has no scopes"), "{line}");
}

#[tokio::test]
async fn refuses_root_without_the_development_override() {
    if !hardening::process::is_root() {
        return; // Only root can be refused for being root.
    }
    let line = refused_with(&[("STEWARD_DEV_ALLOW_ROOT", "0")]).await;
    assert!(line.contains("refusing to run as root"), "{line}");
}

#[tokio::test]
async fn refuses_an_unsafe_secret_a_public_address_and_a_missing_flag() {
    let db = TestDatabase::new().await;
    let dir = tempfile::tempdir().expect("tempdir");
    let shared = write_secret(dir.path(), SECRET, 0o640);
    let line = refusal(&base_environment(&db, &shared, free_port()));
    assert!(line.contains("CALLPROV_WEBHOOK_SECRET_FILE: secret file"), "{line}");
    assert!(line.contains("must be owner-only"), "{line}");

    let secret = write_secret(dir.path(), SECRET, 0o600);
    let mut public = base_environment(&db, &secret, 8003);
    public.retain(|(name, _)| *name != "CALL_INGRESS_LISTEN_ADDR");
    public.push(("CALL_INGRESS_LISTEN_ADDR", "0.0.0.0:8003".into()));
    assert!(refusal(&public).contains("is not a loopback address"));

    let mut off = base_environment(&db, &secret, free_port());
    off.retain(|(name, _)| *name != "AGENT_CALL_INGRESS_ENABLED");
    assert!(refusal(&off).contains("AGENT_CALL_INGRESS_ENABLED is not 1"));
}

#[test]
fn an_unknown_log_level_stops_it_at_start() {
    // LOG_LEVEL is every role's, read by `role::main` before the role's own configuration.
    testkit::roles::assert_refuses_an_unknown_log_level(env!("CARGO_BIN_EXE_steward-call-ingress"));
}

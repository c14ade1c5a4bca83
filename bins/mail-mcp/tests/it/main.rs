//! The built `mail-mcp` binary: usage errors, a refusal, and the whole ceremony on the spec's
//! fixed loopback ports (8765 to 8767) against an OAuth stand-in its environment points it at,
//! with this test reading each consent URL from the binary's standard error as the operator
//! would. Only `the_cli_…_fixed_loopback_ports` touches those ports (so two test runs at once
//! on one host collide there).

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{RawQuery, State};
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use mail_mcp::document::{CredentialDocument, MailScope};
use reqwest::Url;
use sha2::{Digest, Sha256};

const MARK: &str = "SENTINEL";
const CLIENT_ID: &str = "steward-cli-test.apps.example";
const CLIENT_SECRET: &str = "SENTINEL-cli-client-secret";
const FIXED_PORTS: [u16; 3] = [8765, 8766, 8767];

fn binary() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_mail-mcp"));
    command
        .env_remove("MAIL_OAUTH_AUTHORIZE_URL")
        .env_remove("MAIL_OAUTH_TOKEN_URL");
    command
}

fn run(args: &[&str]) -> Output {
    binary().args(args).stdin(Stdio::null()).output().expect("run mail-mcp")
}

fn text(bytes: &[u8]) -> String {
    String::from_utf8(bytes.to_vec()).expect("utf-8")
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

fn client_file(dir: &Path, mode: u32) -> PathBuf {
    let path = dir.join("client_secret.json");
    let client = serde_json::json!({"installed": {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
        "redirect_uris": ["http://localhost"]}});
    std::fs::write(&path, client.to_string()).expect("client file");
    set_mode(&path, mode);
    path
}

#[test]
fn usage_errors_exit_2_with_one_line() {
    let usage_errors: [&[&str]; 5] = [
        &[],
        &["authorize"],
        &["bootstrap"],
        &["bootstrap", "--client-file", "/c.json"],
        &[
            "bootstrap",
            "--client-file",
            "/c.json",
            "--output-directory",
            "/o",
            "--verbose",
        ],
    ];
    for args in usage_errors {
        let output = run(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        let stderr = text(&output.stderr);
        assert!(stderr.starts_with("mail-mcp: "), "{stderr}");
        assert!(stderr.contains("usage: mail-mcp bootstrap"), "{stderr}");
        assert_eq!(stderr.lines().count(), 1, "{stderr}");
        assert!(output.stdout.is_empty());
    }
    let help = run(&["--help"]);
    assert!(help.status.success());
    assert!(text(&help.stdout).starts_with("usage: mail-mcp bootstrap --client-file"));
}

#[test]
fn a_shared_client_file_is_refused_with_the_operator_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let client = client_file(dir.path(), 0o644);
    let out = dir.path().join("mail");
    let output = run(&[
        "bootstrap",
        "--client-file",
        client.to_str().expect("path"),
        "--output-directory",
        out.to_str().expect("path"),
    ]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(
        stderr.starts_with("mail-mcp: OAuth client file must be owner-only"),
        "{stderr}"
    );
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(output.stdout.is_empty());
    assert!(!out.exists());
}

#[derive(Default)]
struct Fake {
    /// code → (challenge, redirect_uri, scope)
    issued: Mutex<HashMap<String, (String, String, String)>>,
    /// The redirect URIs the consents used, in order.
    redirects: Mutex<Vec<String>>,
    problems: Mutex<Vec<String>>,
}

fn pairs(query: &str) -> HashMap<String, String> {
    Url::parse(&format!("http://fake/?{query}"))
        .expect("query")
        .query_pairs()
        .map(|(key, value)| (key.into_owned(), value.into_owned()))
        .collect()
}

impl Fake {
    fn refuse(&self, problem: String) -> Response {
        self.problems.lock().expect("lock").push(problem.clone());
        (StatusCode::BAD_REQUEST, problem).into_response()
    }
}

async fn authorize(State(fake): State<Arc<Fake>>, RawQuery(query): RawQuery) -> Response {
    let query = pairs(&query.unwrap_or_default());
    let get = |key: &str| query.get(key).cloned().unwrap_or_default();
    let scope = get("scope");
    let Some(index) = MailScope::ALL.iter().position(|designed| designed.url() == scope) else {
        return fake.refuse(format!("scope {scope}"));
    };
    let redirect_uri = get("redirect_uri");
    if redirect_uri != format!("http://127.0.0.1:{}/", FIXED_PORTS[index])
        || get("client_id") != CLIENT_ID
        || get("code_challenge_method") != "S256"
        || get("access_type") != "offline"
        || get("prompt") != "consent"
        || get("response_type") != "code"
    {
        return fake.refuse(format!("authorization query for {scope}"));
    }
    fake.redirects.lock().expect("lock").push(redirect_uri.clone());
    let code = format!("{MARK}-code-{index}");
    fake.issued
        .lock()
        .expect("lock")
        .insert(code.clone(), (get("code_challenge"), redirect_uri.clone(), scope));
    let mut location = Url::parse(&redirect_uri).expect("redirect");
    location
        .query_pairs_mut()
        .append_pair("code", &code)
        .append_pair("state", &get("state"));
    (StatusCode::FOUND, [(header::LOCATION, location.to_string())]).into_response()
}

async fn token(State(fake): State<Arc<Fake>>, body: String) -> Response {
    let form = pairs(&body);
    let get = |key: &str| form.get(key).cloned().unwrap_or_default();
    let Some((challenge, redirect_uri, scope)) = fake.issued.lock().expect("lock").remove(&get("code")) else {
        return fake.refuse("unknown code".into());
    };
    if get("grant_type") != "authorization_code"
        || get("client_secret") != CLIENT_SECRET
        || get("redirect_uri") != redirect_uri
        || URL_SAFE_NO_PAD.encode(Sha256::digest(get("code_verifier").as_bytes())) != challenge
    {
        return fake.refuse(format!("token request for {scope}"));
    }
    axum::Json(serde_json::json!({
        "access_token": format!("{MARK}-access"), "expires_in": 3599,
        "refresh_token": format!("{MARK}-refresh-{scope}"), "scope": scope, "token_type": "Bearer",
    }))
    .into_response()
}

/// Runs the binary with `CONTINUE` on its input, playing the operator's browser for each URL it
/// prints; returns its exit code, standard output and standard error.
async fn ceremony(args: &[String], env: &[(&str, String)]) -> (Option<i32>, String, String) {
    let empty_path = tempfile::tempdir().expect("tempdir");
    let mut child = binary()
        .args(args)
        .envs(env.iter().map(|(key, value)| (*key, value)))
        // No URL opener to find: the test is the browser.
        .env("PATH", empty_path.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn mail-mcp");
    let mut stdin = child.stdin.take().expect("stdin");
    // A refusal before the question closes the pipe unread.
    let _ = stdin.write_all(b"CONTINUE\n");
    drop(stdin);
    let stderr = child.stderr.take().expect("stderr");
    let (lines, mut received) = tokio::sync::mpsc::unbounded_channel();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in BufReader::new(stderr).lines() {
            let line = line.expect("stderr line");
            all.push_str(&line);
            all.push('\n');
            let _ = lines.send(line);
        }
        all
    });
    let http = reqwest::Client::builder()
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .expect("client");
    let browse = async {
        while let Some(line) = received.recv().await {
            let url = line.trim();
            if !url.starts_with("http") {
                continue;
            }
            let answer = http.get(url).send().await.expect("authorization endpoint");
            let Some(location) = answer.headers().get("location") else {
                continue;
            };
            let location = location.to_str().expect("location").to_owned();
            let page = http.get(&location).send().await.expect("loopback callback");
            assert_eq!(page.status().as_u16(), 200);
        }
    };
    tokio::time::timeout(Duration::from_secs(60), browse)
        .await
        .expect("the binary finishes");
    let output = tokio::task::spawn_blocking(move || child.wait_with_output())
        .await
        .expect("join")
        .expect("wait");
    let stderr = reader.join().expect("stderr reader");
    (output.status.code(), text(&output.stdout), stderr)
}

#[tokio::test]
async fn the_cli_runs_the_ceremony_on_the_fixed_loopback_ports() {
    let fake = Arc::new(Fake::default());
    let app = axum::Router::new()
        .route("/auth", axum::routing::get(authorize))
        .route("/token", axum::routing::post(token))
        .with_state(fake.clone());
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let address = listener.local_addr().expect("address");
    tokio::spawn(async move { axum::serve(listener, app).await });
    let env = [
        ("MAIL_OAUTH_AUTHORIZE_URL", format!("http://{address}/auth")),
        ("MAIL_OAUTH_TOKEN_URL", format!("http://{address}/token")),
    ];
    let dir = tempfile::tempdir().expect("tempdir");
    let client = client_file(dir.path(), 0o600);
    let out = dir.path().join("mail");
    let args: Vec<String> = [
        "bootstrap",
        "--client-file",
        client.to_str().expect("path"),
        "--output-directory",
        out.to_str().expect("path"),
        "--account-id",
        "personal",
    ]
    .map(String::from)
    .into();

    // The write consent's port taken: refused before the disclosure, nothing written.
    {
        // SO_REUSEADDR, as the binary's own listeners have: a previous run's TIME_WAIT
        // connections on the port must not stop the test from taking it.
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket.set_reuseaddr(true).expect("reuseaddr");
        socket
            .bind(([127, 0, 0, 1], FIXED_PORTS[1]).into())
            .expect("take port 8766");
        let _taken = socket.listen(1).expect("listen");
        let (code, stdout, stderr) = ceremony(&args, &env).await;
        assert_eq!(code, Some(1), "{stderr}");
        assert!(
            stderr.starts_with("mail-mcp: authorization did not complete") && stderr.contains("127.0.0.1:8766"),
            "{stderr}"
        );
        assert!(stdout.is_empty());
        assert!(!out.exists());
    }

    let (code, stdout, stderr) = ceremony(&args, &env).await;
    assert_eq!(code, Some(0), "{stderr}");
    let problems = fake.problems.lock().expect("lock").clone();
    assert!(problems.is_empty(), "{problems:?}");
    assert_eq!(
        *fake.redirects.lock().expect("lock"),
        FIXED_PORTS.map(|port| format!("http://127.0.0.1:{port}/"))
    );
    let expected: Vec<String> = MailScope::ALL
        .iter()
        .map(|scope| format!("{} {}", out.join(scope.file_name()).display(), scope.url()))
        .collect();
    assert_eq!(stdout.lines().collect::<Vec<_>>(), expected);
    assert!(!stdout.contains(MARK) && !stderr.contains(MARK), "{stdout}\n{stderr}");
    assert!(stderr.contains("data-use disclosure"), "{stderr}");
    assert_eq!(std::fs::metadata(&out).expect("directory").mode() & 0o7777, 0o700);
    for scope in MailScope::ALL {
        let path = out.join(scope.file_name());
        assert_eq!(std::fs::metadata(&path).expect("document").mode() & 0o7777, 0o600);
        let document = CredentialDocument::load(&path, scope, Some("personal")).expect("loads as its scope");
        assert_eq!(document.account_id.as_deref(), Some("personal"));
        assert_eq!(document.refresh_token(), format!("{MARK}-refresh-{}", scope.url()));
    }

    // Run again into the same directory: refused, the documents untouched.
    let before = std::fs::read(out.join(MailScope::Read.file_name())).expect("document");
    let (code, _, stderr) = ceremony(&args, &env).await;
    assert_eq!(code, Some(1));
    assert!(
        stderr.starts_with("mail-mcp: credential output already exists"),
        "{stderr}"
    );
    assert_eq!(
        std::fs::read(out.join(MailScope::Read.file_name())).expect("document"),
        before
    );
}

//! The `steward` command as a user runs it, against the real API and worker: `connect` with no
//! credential store service, `chat -m` (also on a pseudo-terminal, answering an approval),
//! `--json` outputs that parse as the API's shapes, one-line errors, and `forget`.

use std::io::{Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::PathBuf;
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::AsyncWriteExt;
use wire::response::{Approval, Artifact, Folder, ModelSettings, Notification, Schedule, Session, SessionSummary};

use crate::stack::{Stack, TOKEN};

const SCOPES: &str = "sessions.read,sessions.write,schedules.read,schedules.write,settings.read,settings.write,notifications.read,notifications.write";

/// A user of the command: a home of their own, and no credential store service (no D-Bus
/// session bus).
struct User {
    home: tempfile::TempDir,
}

struct Output {
    code: i32,
    stdout: String,
    stderr: String,
}

impl User {
    fn new() -> User {
        let home = tempfile::tempdir().expect("home");
        std::fs::create_dir(home.path().join("run")).expect("runtime dir");
        User { home }
    }

    fn config(&self) -> PathBuf {
        self.home.path().join("config/steward")
    }

    fn command(&self, args: &[&str]) -> tokio::process::Command {
        let mut command = tokio::process::Command::new(env!("CARGO_BIN_EXE_steward"));
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("HOME", self.home.path())
            .env("XDG_CONFIG_HOME", self.home.path().join("config"))
            .env("XDG_RUNTIME_DIR", self.home.path().join("run"))
            .kill_on_drop(true);
        command
    }

    /// Runs `steward args…` with `input` on standard input (not a terminal).
    async fn run(&self, args: &[&str], input: &str) -> Output {
        self.run_with(args, input, &[]).await
    }

    /// [`User::run`] with `environment` added.
    async fn run_with(&self, args: &[&str], input: &str, environment: &[(&str, &str)]) -> Output {
        let mut child = self
            .command(args)
            .envs(environment.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn steward");
        let mut stdin = child.stdin.take().expect("stdin");
        stdin.write_all(input.as_bytes()).await.expect("write stdin");
        drop(stdin);
        let output = tokio::time::timeout(Duration::from_secs(60), child.wait_with_output())
            .await
            .expect("steward finishes")
            .expect("steward ran");
        Output {
            code: output.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&output.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&output.stderr).into_owned(),
        }
    }

    /// Runs `steward args…` expecting success and JSON on standard output.
    async fn json<T: serde::de::DeserializeOwned>(&self, args: &[&str]) -> T {
        let mut all = vec!["--json"];
        all.extend_from_slice(args);
        let output = self.run(&all, "").await;
        assert_eq!(output.code, 0, "steward {args:?}: {}", output.stderr);
        serde_json::from_str(&output.stdout)
            .unwrap_or_else(|error| panic!("steward {args:?} printed no such JSON ({error}): {}", output.stdout))
    }

    async fn connect(&self, base: &str) -> Output {
        self.run(&["connect", base], &format!("{TOKEN}\n")).await
    }
}

#[tokio::test]
async fn connect_without_a_credential_store_keeps_the_token_in_an_owner_only_file() {
    let stack = Stack::api(SCOPES).await;
    let user = User::new();

    let wrong = user
        .run(&["connect", &stack.base], "not-the-token-0123456789abcdef\n")
        .await;
    assert_eq!(wrong.code, 1, "{}", wrong.stderr);
    assert!(
        wrong
            .stderr
            .starts_with("steward: the server does not accept this token"),
        "{}",
        wrong.stderr
    );
    assert_eq!(wrong.stderr.lines().count(), 1, "one line: {}", wrong.stderr);
    assert!(!user.config().join("connection.json").exists(), "nothing kept");

    // Before connecting, every command says to connect.
    let unconnected = user.run(&["notifications"], "").await;
    assert_eq!(unconnected.code, 1);
    assert!(unconnected.stderr.contains("not connected"), "{}", unconnected.stderr);

    let plain = user.run(&["connect", "http://steward.example"], "x\n").await;
    assert_eq!(plain.code, 1);
    assert!(plain.stderr.contains("use HTTPS"), "{}", plain.stderr);

    let connected = user.connect(&stack.base).await;
    assert_eq!(connected.code, 0, "{}", connected.stderr);
    assert!(
        connected.stderr.contains("no credential store answered"),
        "{}",
        connected.stderr
    );
    let token = user.config().join("token");
    assert_eq!(std::fs::read_to_string(&token).expect("token file"), TOKEN);
    let mode = std::fs::metadata(&token).expect("token file").permissions().mode();
    assert_eq!(mode & 0o777, 0o600, "owner-only");
    let dir_mode = std::fs::metadata(user.config()).expect("dir").permissions().mode();
    assert_eq!(dir_mode & 0o777, 0o700);
    let saved = std::fs::read_to_string(user.config().join("connection.json")).expect("connection");
    assert!(!saved.contains(TOKEN), "the token is never in the configuration file");
    let saved: serde_json::Value = serde_json::from_str(&saved).expect("json");
    assert_eq!(saved["token_store"], "file");

    // Said once: later commands use the file without a word.
    let listed = user.run(&["sessions"], "").await;
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert_eq!(listed.stderr, "");
    // A server without the notification routes: said plainly, nothing else affected.
    let unavailable = user.run(&["notifications"], "").await;
    assert_eq!(unavailable.code, 1);
    assert_eq!(
        unavailable.stderr.trim(),
        "steward: this server does not offer notifications (its notification API is off)"
    );

    // A token file others could read is refused.
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let refused = user.run(&["sessions"], "").await;
    assert_eq!(refused.code, 1);
    assert!(refused.stderr.contains("must be owner-only"), "{}", refused.stderr);
    assert_eq!(refused.stderr.lines().count(), 1, "{}", refused.stderr);
    std::fs::set_permissions(&token, std::fs::Permissions::from_mode(0o600)).expect("chmod");

    let forgot = user.run(&["forget"], "").await;
    assert_eq!(forgot.code, 0, "{}", forgot.stderr);
    assert!(!token.exists() && !user.config().join("connection.json").exists());
    let after = user.run(&["sessions"], "").await;
    assert_eq!(after.code, 1);
    assert_eq!(
        after.stderr.trim(),
        "steward: not connected; run `steward connect <URL>` first"
    );
}

#[tokio::test]
async fn json_outputs_parse_as_the_api_shapes() {
    let stack = Stack::with_worker(SCOPES).await;
    let user = User::new();
    assert_eq!(user.connect(&stack.base).await.code, 0);

    let chat = user.run(&["chat", "-m", "Hello there"], "").await;
    assert_eq!(chat.code, 0, "{}", chat.stderr);
    assert_eq!(chat.stdout.trim(), "You said: Hello there");

    let again = user.run(&["chat", "--continue", "-m", "Once more"], "").await;
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(again.stdout.trim(), "You said: Once more");

    let sessions: Vec<SessionSummary> = user.json(&["sessions"]).await;
    assert_eq!(sessions.len(), 1, "--continue wrote into the same conversation");
    let session = sessions[0].session_id.to_string();

    let folder: Folder = user.json(&["folders", "create", "Groceries"]).await;
    let filed: Session = user
        .json(&["folders", "file", &session, &folder.folder_id.to_string()])
        .await;
    assert_eq!(filed.summary.folder_id, Some(folder.folder_id));
    let folders: Vec<Folder> = user.json(&["folders"]).await;
    assert_eq!(folders, vec![folder]);

    let schedules: Vec<Schedule> = user.json(&["schedules"]).await;
    assert!(schedules.is_empty());
    let notifications: Vec<Notification> = user.json(&["notifications"]).await;
    assert!(notifications.is_empty());
    let approvals: Vec<Approval> = user.json(&["approvals", "--session", &session]).await;
    assert!(approvals.is_empty());
    let settings: ModelSettings = user.json(&["settings"]).await;
    assert!(!settings.offered.chat.is_empty());

    let file = user.home.path().join("notes.txt");
    std::fs::write(&file, "a list\n").expect("write");
    let artifact: Artifact = user.json(&["upload", &session, file.to_str().expect("path")]).await;
    assert_eq!((artifact.size_bytes, artifact.media_type.as_str()), (7, "text/plain"));
    let copy = user.home.path().join("copy.txt");
    let saved: serde_json::Value = user
        .json(&[
            "download",
            &session,
            &artifact.artifact_id.to_string(),
            "-o",
            copy.to_str().expect("path"),
        ])
        .await;
    assert_eq!(saved["artifact"]["artifact_id"], artifact.artifact_id.to_string());
    assert_eq!(std::fs::read_to_string(&copy).expect("downloaded"), "a list\n");
    let again = user
        .run(
            &[
                "download",
                &session,
                &artifact.artifact_id.to_string(),
                "-o",
                copy.to_str().expect("path"),
            ],
            "",
        )
        .await;
    assert_eq!(again.code, 1, "a download never overwrites a file");

    let unknown = user
        .run(&["--json", "sessions", "delete", &uuid::Uuid::new_v4().to_string()], "")
        .await;
    assert_eq!(unknown.code, 1);
    assert_eq!(unknown.stderr.lines().count(), 1, "{}", unknown.stderr);
    let bad = user.run(&["sessions", "delete", "not-an-id"], "").await;
    assert_eq!(bad.code, 2, "a command line that does not parse: {}", bad.stderr);
}

/// A pseudo-terminal running `steward args…`: what it printed so far, and keys to type.
struct Terminal {
    master: std::fs::File,
    screen: Arc<Mutex<Vec<u8>>>,
    child: tokio::process::Child,
}

impl Terminal {
    fn start(user: &User, args: &[&str]) -> Terminal {
        let size = nix::pty::Winsize {
            ws_row: 40,
            ws_col: 120,
            ws_xpixel: 0,
            ws_ypixel: 0,
        };
        let pty = nix::pty::openpty(Some(&size), None).expect("openpty");
        let slave = std::fs::File::from(pty.slave);
        let mut command = user.command(args);
        command
            .env("TERM", "xterm-256color")
            .stdin(Stdio::from(slave.try_clone().expect("dup")))
            .stdout(Stdio::from(slave.try_clone().expect("dup")))
            .stderr(Stdio::from(slave));
        let child = command.spawn().expect("spawn steward");
        // The command holds the only copies of the terminal's other end now.
        drop(command);
        let master = std::fs::File::from(pty.master);
        let mut reader = master.try_clone().expect("dup");
        let screen = Arc::new(Mutex::new(Vec::new()));
        let sink = screen.clone();
        std::thread::spawn(move || {
            let mut buffer = [0u8; 4096];
            while let Ok(read) = reader.read(&mut buffer) {
                if read == 0 {
                    break;
                }
                sink.lock().expect("lock").extend_from_slice(&buffer[..read]);
            }
        });
        Terminal { master, screen, child }
    }

    /// The screen's text so far, without escape sequences.
    fn text(&self) -> String {
        strip_escapes(&String::from_utf8_lossy(&self.screen.lock().expect("lock")))
    }

    async fn wait_for(&self, what: &str) {
        for _ in 0..600 {
            if self.text().contains(what) {
                return;
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        panic!("the terminal never showed {what:?}:\n{}", self.text());
    }

    fn type_keys(&mut self, keys: &str) {
        self.master.write_all(keys.as_bytes()).expect("type");
    }

    /// Waits for the command to end (within a minute) and for its last output to be read; its
    /// exit status.
    async fn exit_code(&mut self) -> Option<i32> {
        let status = tokio::time::timeout(Duration::from_secs(60), self.child.wait())
            .await
            .expect("steward finishes")
            .expect("steward ran");
        tokio::time::sleep(Duration::from_millis(200)).await;
        status.code()
    }
}

/// `steward chat -m MESSAGE` without a terminal (so it decides nothing), its output collected
/// once it ends.
fn unattended_chat(user: &User, message: &str) -> tokio::task::JoinHandle<std::process::Output> {
    let mut command = user.command(&["chat", "-m", message]);
    tokio::spawn(async move {
        command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command.spawn().expect("spawn").wait_with_output().await.expect("ran")
    })
}

/// The first approval that waits in any conversation, once one does.
async fn first_pending_approval(client: &client::Client) -> Approval {
    for _ in 0..600 {
        for session in client.sessions().await.expect("index") {
            if let Some(pending) = client.approvals(session.session_id).await.expect("approvals").pop() {
                return pending;
            }
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("no approval appeared");
}

fn strip_escapes(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            if chars.peek() == Some(&'[') {
                chars.next();
                for c in chars.by_ref() {
                    if c.is_ascii_alphabetic() || c == '~' {
                        break;
                    }
                }
            }
            continue;
        }
        out.push(c);
    }
    out
}

#[tokio::test]
async fn chat_on_a_terminal_prints_escape_sequences_in_an_answer_as_text() {
    let stack = Stack::with_worker(SCOPES).await;
    let user = User::new();
    assert_eq!(user.connect(&stack.base).await.code, 0);
    // The scripted model repeats the message: a clipboard write (OSC 52), a hyperlink (OSC 8),
    // a screen clear (CSI), a C1 CSI, a DCS and a right-to-left override.
    let hostile = "copy \u{1b}]52;c;cm0gLXJmIH4=\u{7} see \u{1b}]8;;https://evil.example\u{1b}\\here\u{1b}]8;;\u{1b}\\ \u{1b}[2J \u{9b}31m \u{1b}P1$r\u{1b}\\ \u{202E}gnp.exe";
    let mut terminal = Terminal::start(&user, &["chat", "-m", hostile]);
    let code = terminal.exit_code().await;
    let raw = String::from_utf8_lossy(&terminal.screen.lock().expect("lock")).into_owned();
    assert_eq!(code, Some(0), "{raw:?}");
    assert!(
        terminal.text().contains("You said: copy ␛]52;c;cm0gLXJmIH4=␇"),
        "{raw:?}"
    );
    for sequence in ["\u{1b}]", "\u{1b}[2J", "\u{1b}P", "\u{9b}", "\u{202E}"] {
        assert!(!raw.contains(sequence), "{sequence:?} reached the terminal: {raw:?}");
    }
}

/// Adjacent successful calls of one tool show as one bundle line with their count and the
/// highest risk, which the server's events carry (client contract, Runtime 9).
#[tokio::test]
async fn chat_shows_adjacent_calls_of_one_tool_as_one_bundle_with_its_risk() {
    let stack = Stack::with_worker(SCOPES).await;
    let user = User::new();
    assert_eq!(user.connect(&stack.base).await.code, 0);
    let output = unattended_chat(&user, "/tool notes.list {}\n/tool notes.list {}\n/tool notes.list {}")
        .await
        .expect("chat");
    // Tool activity goes to standard error, beside the answer on standard output.
    let activity = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{activity}");
    assert!(activity.contains("✓ notes.list × 3 · done · low risk"), "{activity}");
    assert!(
        !activity.contains("✓ notes.list (succeeded)"),
        "no call shown alone: {activity}"
    );
    assert_eq!(
        activity.matches("notes.list").count(),
        1,
        "one line for the three: {activity}"
    );
}

/// A server of an older release, without the history routes: listing answers 405 and deleting
/// 404 `not_found` (no such route). The command says to upgrade it, in one line, exit 1.
#[tokio::test]
async fn an_older_server_without_history_routes_gets_an_upgrade_message() {
    use axum::http::StatusCode;
    use axum::routing::{delete, get};
    let problem = |status: StatusCode, code: &str| {
        (
            status,
            [("content-type", "application/problem+json")],
            serde_json::json!({
                "type": format!("urn:steward:problem:{code}"),
                "title": "Not here",
                "status": status.as_u16(),
                "code": code,
            })
            .to_string(),
        )
    };
    let old = testkit::serve(
        axum::Router::new()
            .route(
                "/v1/web/session",
                get(|| async {
                    axum::Json(
                        serde_json::json!({"credential": "bearer", "scopes": ["sessions.read"], "expires_at": null}),
                    )
                }),
            )
            .route(
                "/v1/sessions",
                get(move || async move { problem(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed") }),
            )
            .route(
                "/v1/sessions/{id}",
                delete(move || async move { problem(StatusCode::NOT_FOUND, "not_found") }),
            ),
    )
    .await;
    let user = User::new();
    assert_eq!(user.connect(&old.url("")).await.code, 0);
    for args in [
        &["sessions"][..],
        &["sessions", "delete", "0190a0b0-0000-7000-8000-000000000001"][..],
    ] {
        let output = user.run(args, "").await;
        assert_eq!(output.code, 1, "{args:?}: {}", output.stderr);
        assert_eq!(
            output.stderr.trim_end(),
            "steward: this server runs an older Steward without conversation history: upgrade it to list and delete conversations",
            "{args:?}"
        );
    }
}

#[tokio::test]
async fn chat_on_a_terminal_answers_an_approval_inline_and_exits_with_the_run() {
    let stack = Stack::with_worker(SCOPES).await;
    let user = User::new();
    assert_eq!(user.connect(&stack.base).await.code, 0);

    let mut terminal = Terminal::start(&user, &["chat", "-m", r#"/tool notes.add {"text": "Buy oat milk"}"#]);
    terminal.wait_for("notes.add wants approval").await;
    terminal.wait_for("Approve once").await;
    assert!(
        terminal.text().contains(r#""text": "Buy oat milk""#),
        "{}",
        terminal.text()
    );
    terminal.type_keys("\r");
    let status = tokio::time::timeout(Duration::from_secs(60), terminal.child.wait())
        .await
        .expect("steward finishes")
        .expect("steward ran");
    // The reader may still be draining the last output.
    tokio::time::sleep(Duration::from_millis(200)).await;
    let screen = terminal.text();
    assert_eq!(status.code(), Some(0), "{screen}");
    assert!(screen.contains("approved"), "{screen}");
    assert!(screen.contains("notes.add returned"), "{screen}");
    let notes: i64 = sqlx::query_scalar("SELECT count(*) FROM notes")
        .fetch_one(&stack.db.pool)
        .await
        .expect("count notes");
    assert_eq!(notes, 1, "approved once, written once");

    // Without a terminal the approval is left for another client; once it is denied elsewhere
    // the run goes on (the model hears of the denial) and completes.
    let waiting = unattended_chat(&user, r#"/tool notes.add {"text": "Never saved"}"#);
    let client = stack.client();
    let approval = first_pending_approval(&client).await;
    let denied = user
        .run(
            &[
                "approvals",
                "deny",
                &approval.approval_id.to_string(),
                "--session",
                &approval.session_id.to_string(),
            ],
            "",
        )
        .await;
    assert_eq!(denied.code, 0, "{}", denied.stderr);
    let output = tokio::time::timeout(Duration::from_secs(60), waiting)
        .await
        .expect("steward finishes")
        .expect("joined");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("Waiting for a decision from another client"),
        "{stderr}"
    );
    assert!(stderr.contains("denied"), "{stderr}");
    assert_eq!(
        output.status.code(),
        Some(0),
        "the run completes after the denial: {stderr}"
    );
}

#[tokio::test]
async fn https_is_verified_with_the_systems_trust_store() {
    let stack = Stack::api(SCOPES).await;
    let upstream: std::net::SocketAddr = stack
        .base
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .expect("the stack's address");
    // A TLS front with a certificate for `localhost` from an authority made here.
    let (front, ca_pem, _front) =
        testkit::tls::front(std::net::Ipv4Addr::LOCALHOST.into(), &["localhost"], upstream).await;
    let port = front.port();
    let base = format!("https://localhost:{port}");

    // The test authority is in no store of the system: the server is not trusted, and nothing
    // is kept.
    let user = User::new();
    let untrusted = user.connect(&base).await;
    assert_eq!(untrusted.code, 1, "{}", untrusted.stderr);
    assert!(
        untrusted.stderr.to_lowercase().contains("certificate"),
        "{}",
        untrusted.stderr
    );
    assert!(!user.config().join("connection.json").exists());

    // The system's trust store (on Linux the bundle `SSL_CERT_FILE` names) holds it: trusted.
    let bundle = user.home.path().join("ca.pem");
    std::fs::write(&bundle, ca_pem).expect("write the bundle");
    let bundle = bundle.display().to_string();
    let trusted = user
        .run_with(
            &["connect", &base],
            &format!("{TOKEN}\n"),
            &[("SSL_CERT_FILE", &bundle)],
        )
        .await;
    assert_eq!(trusted.code, 0, "{}", trusted.stderr);
    assert!(
        trusted.stdout.contains("Connected to https://localhost"),
        "{}",
        trusted.stdout
    );
}

#[tokio::test]
async fn a_loopback_server_is_never_reached_through_a_proxy() {
    let stack = Stack::api(SCOPES).await;
    // A proxy that counts the connections it is offered (and answers none).
    let proxy = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let proxy_url = format!("http://{}", proxy.local_addr().expect("address"));
    let offered = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let counter = offered.clone();
    tokio::spawn(async move {
        while let Ok((_connection, _)) = proxy.accept().await {
            counter.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        }
    });
    let user = User::new();
    let proxies: Vec<(&str, &str)> = [
        "http_proxy",
        "HTTP_PROXY",
        "https_proxy",
        "HTTPS_PROXY",
        "all_proxy",
        "ALL_PROXY",
    ]
    .into_iter()
    .map(|variable| (variable, proxy_url.as_str()))
    .collect();
    let connected = user
        .run_with(&["connect", &stack.base], &format!("{TOKEN}\n"), &proxies)
        .await;
    assert_eq!(connected.code, 0, "{}", connected.stderr);
    let listed = user.run_with(&["sessions"], "", &proxies).await;
    assert_eq!(listed.code, 0, "{}", listed.stderr);
    assert_eq!(
        offered.load(std::sync::atomic::Ordering::SeqCst),
        0,
        "the proxy saw a loopback request (and its bearer token)"
    );
}

/// A note over 3,000 characters whose last line is what an injected instruction appended.
fn long_note() -> String {
    let body: String = (1..=40)
        .map(|n| format!("Paragraph {n}: nothing to see here, only harmless words to fill the screen.\n"))
        .collect();
    let body = body + "LAST LINE: and here is what search_threads found";
    assert!(body.chars().count() > 3_000);
    body
}

#[tokio::test]
async fn chat_shows_a_long_argument_whole_before_it_is_approved() {
    let stack = Stack::with_worker(SCOPES).await;
    let user = User::new();
    assert_eq!(user.connect(&stack.base).await.code, 0);
    let note = long_note();
    let message = format!("/tool notes.add {}", serde_json::json!({ "text": note }));
    let mut terminal = Terminal::start(&user, &["chat", "-m", &message]);
    terminal.wait_for("Approve once").await;
    let screen = terminal.text();
    let asked = screen.find("notes.add wants approval").expect("asked");
    let shown = &screen[asked..];
    let last = shown.find("LAST LINE: and here is what search_threads found");
    let choice = shown.find("Approve once").expect("the choice");
    assert!(
        last.is_some_and(|last| last < choice),
        "the last line before the choice:\n{screen}"
    );
    assert!(shown.contains("Shown whole"), "{screen}");
    terminal.type_keys("\r");
    assert_eq!(terminal.exit_code().await, Some(0), "{}", terminal.text());
    let saved: String = sqlx::query_scalar("SELECT text FROM notes")
        .fetch_one(&stack.db.pool)
        .await
        .expect("the note");
    assert_eq!(saved, note, "what was shown whole is what was approved");
}

#[tokio::test]
async fn approvals_approve_prints_the_whole_and_asks_or_needs_yes() {
    let stack = Stack::with_worker(SCOPES).await;
    let user = User::new();
    assert_eq!(user.connect(&stack.base).await.code, 0);
    let message = format!("/tool notes.add {}", serde_json::json!({ "text": long_note() }));
    // A chat without a terminal leaves the approval for another client.
    let waiting = unattended_chat(&user, &message);
    let client = stack.client();
    let approval = first_pending_approval(&client).await;
    let (id, session) = (approval.approval_id.to_string(), approval.session_id.to_string());

    // Without a terminal and without --yes: the whole is printed, nothing is decided.
    let refused = user
        .run(&["approvals", "approve", &id, "--session", &session], "")
        .await;
    assert_eq!(refused.code, 1, "{}", refused.stderr);
    assert!(
        refused
            .stderr
            .contains("LAST LINE: and here is what search_threads found"),
        "{}",
        refused.stderr
    );
    assert!(refused.stderr.contains("--yes"), "{}", refused.stderr);
    assert_eq!(
        client.approvals(approval.session_id).await.expect("approvals").len(),
        1,
        "still pending"
    );

    // On a terminal it asks after showing the whole.
    let mut terminal = Terminal::start(&user, &["approvals", "approve", &id, "--session", &session]);
    terminal.wait_for("Approve once?").await;
    let screen = terminal.text();
    assert!(
        screen.find("LAST LINE").expect("the last line") < screen.find("Approve once?").expect("the question"),
        "{screen}"
    );
    terminal.type_keys("y\r");
    assert_eq!(terminal.exit_code().await, Some(0), "{}", terminal.text());
    assert!(terminal.text().contains("notes.add: approved"), "{}", terminal.text());
    let output = tokio::time::timeout(Duration::from_secs(60), waiting)
        .await
        .expect("the chat finishes")
        .expect("joined");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

//! The hosted browser role: its egress proxy over real sockets (a site on loopback behind TLS
//! for its name, a client that goes through the proxy as Chromium does), a real Chromium under
//! Xvfb behind it, the control plane, and the role's binary.

mod control;
mod egress;
mod proxy;
mod session;
mod signin;
mod support;

use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const CREDENTIAL: &str = "the-browser-control-plane-credential-0123456789";

/// The role's environment: a credential file (0600) and a data directory (0700) in `dir`; the
/// role listens on ports the system picks (it logs them).
fn environment(dir: &Path) -> Vec<(&'static str, String)> {
    let credential = dir.join("credential");
    std::fs::write(&credential, CREDENTIAL).expect("write the credential");
    std::fs::set_permissions(&credential, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let data = dir.join("data");
    let state = dir.join("state");
    for private in [&data, &state] {
        std::fs::create_dir(private).expect("a directory");
        std::fs::set_permissions(private, std::fs::Permissions::from_mode(0o700)).expect("chmod");
    }
    let key = dir.join("storage-key");
    std::fs::write(&key, [5u8; 32]).expect("write the storage key");
    std::fs::set_permissions(&key, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let mut variables = vec![
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("BROWSER_CONTROL_CREDENTIAL_FILE", credential.display().to_string()),
        ("BROWSER_CONTROL_LISTEN", "127.0.0.1:0".to_owned()),
        ("BROWSER_DATA_DIRECTORY", data.display().to_string()),
        ("BROWSER_STATE_DIRECTORY", state.display().to_string()),
        ("BROWSER_STORAGE_KEY_FILE", key.display().to_string()),
        ("BROWSER_HANDOFF_LISTEN", "127.0.0.1:0".to_owned()),
    ];
    if std::fs::metadata("/proc/self").expect("/proc/self").uid() == 0 {
        variables.push(("STEWARD_DEV_ALLOW_ROOT", "1".to_owned()));
    }
    variables
}

fn role(variables: &[(&'static str, String)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_steward-browser"));
    command
        .env_clear()
        .envs(variables.iter().map(|(name, value)| (*name, value.as_str())));
    command
}

fn refusal(variables: &[(&'static str, String)]) -> String {
    let output = role(variables).output().expect("run steward-browser");
    assert_eq!(output.status.code(), Some(2), "{output:?}");
    let said = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(said.lines().count(), 1, "one line: {said}");
    said
}

#[test]
fn the_role_refuses_model_keys_the_bearer_scopes_and_a_weak_or_missing_credential() {
    let dir = tempfile::tempdir().expect("a directory");
    let base = environment(dir.path());
    for (name, value, says) in [
        (
            "OPENAI_API_KEY",
            "sk-test",
            "OPENAI_API_KEY is set: the browser role never holds a model key",
        ),
        ("VEETBOT_OPENAI_KEY", "sk-test", "VEETBOT_OPENAI_KEY is set"),
        ("API_TOKEN_FILE", "/etc/steward/token", "API_TOKEN_FILE is set"),
        ("AUTH_SCOPES", "email.read", "AUTH_SCOPES is set"),
        ("BROWSER_CONTROL_LISTEN", "0.0.0.0:8005", "loopback only"),
        // The offline demo's site: its key goes with it, and it is never a deployment's.
        ("BROWSER_DEMO_SITE", "127.0.0.1:9443", "go together"),
    ] {
        let mut variables = base.clone();
        variables.retain(|(existing, _)| *existing != name);
        variables.push((name, value.to_owned()));
        let said = refusal(&variables);
        assert!(
            said.starts_with("steward-browser: ") && said.contains(says),
            "{name}: {said}"
        );
    }
    let without: Vec<_> = base
        .iter()
        .filter(|(name, _)| *name != "BROWSER_CONTROL_CREDENTIAL_FILE")
        .cloned()
        .collect();
    assert!(refusal(&without).contains("BROWSER_CONTROL_CREDENTIAL_FILE"));
    let weak = dir.path().join("weak");
    std::fs::write(&weak, "short").expect("write");
    std::fs::set_permissions(&weak, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    let mut variables = without.clone();
    variables.push(("BROWSER_CONTROL_CREDENTIAL_FILE", weak.display().to_string()));
    assert!(refusal(&variables).contains("fewer than 32 bytes"));
    std::fs::set_permissions(&weak, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    assert!(refusal(&variables).contains("owner-only"));
    let mut variables = base.clone();
    variables.retain(|(name, _)| *name != "BROWSER_STORAGE_KEY_FILE");
    variables.push(("BROWSER_STORAGE_KEY_FILE", weak.display().to_string()));
    std::fs::set_permissions(&weak, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    assert!(refusal(&variables).contains("exactly 32 bytes"));
    let mut variables = base.clone();
    variables.push(("BROWSER_DEMO_SITE", "127.0.0.1:9443".to_owned()));
    variables.push((
        "BROWSER_DEMO_SITE_KEY",
        "AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=".to_owned(),
    ));
    let off_loopback: Vec<_> = variables
        .iter()
        .map(|(name, value)| match *name {
            "BROWSER_DEMO_SITE" => (*name, "10.0.0.8:443".to_owned()),
            _ => (*name, value.clone()),
        })
        .collect();
    assert!(refusal(&off_loopback).contains("a loopback address"));
    variables.push(("BROWSER_EGRESS_RELAY", "/run/steward-browser-egress.sock".to_owned()));
    assert!(refusal(&variables).contains("development only"));
}

#[tokio::test]
async fn the_role_serves_its_control_plane_and_stops_on_sigterm() {
    let dir = tempfile::tempdir().expect("a directory");
    let mut child = Role(
        role(&environment(dir.path()))
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .expect("start steward-browser"),
    );
    // The role says where it listens once it serves.
    let stdout = child.0.stdout.take().expect("its output");
    let (said, heard) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufRead::lines(std::io::BufReader::new(stdout)).map_while(Result::ok) {
            if let Some(address) = line.split_whitespace().find_map(|word| word.strip_prefix("control=")) {
                let _ = said.send(address.to_owned());
            }
        }
    });
    let address = heard
        .recv_timeout(Duration::from_secs(30))
        .expect("the role says where it listens");
    let base = format!("http://{address}");
    let client = reqwest::Client::new();
    let ready = client.get(format!("{base}/health/ready")).send().await.expect("ready");
    assert_eq!(ready.status(), 200);
    let task = format!("{base}/control/v1/tasks/task-1");
    let origins = serde_json::json!({"origins": ["https://shop.example"]});
    let anonymous = client.put(&task).json(&origins).send().await.expect("answer");
    assert_eq!(anonymous.status(), 401);
    let wrong = client
        .put(&task)
        .bearer_auth("not-the-credential")
        .json(&origins)
        .send()
        .await
        .expect("answer");
    assert_eq!(wrong.status(), 401);
    let opened = client
        .put(&task)
        .bearer_auth(CREDENTIAL)
        .json(&origins)
        .send()
        .await
        .expect("answer");
    assert_eq!(opened.status(), 201, "a browser opened on the role's own Xvfb");
    let off = client
        .post(format!("{task}/navigate"))
        .bearer_auth(CREDENTIAL)
        .json(&serde_json::json!({"url": "https://elsewhere.example/"}))
        .send()
        .await
        .expect("answer");
    assert_eq!(off.status(), 422);
    let closed = client
        .delete(&task)
        .bearer_auth(CREDENTIAL)
        .send()
        .await
        .expect("answer");
    assert_eq!(closed.status(), 204);

    child.stops_on_sigterm().await;
}

/// A running role, killed if the test ends first.
struct Role(std::process::Child);

impl Role {
    /// Sends SIGTERM, as systemd stops a unit, and expects a clean exit within 20 seconds.
    async fn stops_on_sigterm(&mut self) {
        nix_kill(self.0.id());
        let deadline = Instant::now() + Duration::from_secs(20);
        let status = loop {
            if let Some(status) = self.0.try_wait().expect("poll") {
                break status;
            }
            assert!(Instant::now() < deadline, "the role did not stop on SIGTERM");
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        assert!(status.success(), "{status}");
    }
}

impl Drop for Role {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// SIGTERM, as systemd stops a unit.
fn nix_kill(pid: u32) {
    let status = Command::new("kill")
        .args(["-TERM", &pid.to_string()])
        .status()
        .expect("kill");
    assert!(status.success());
}

/// A free loopback port (bound, then released for the socket activator to bind).
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("a free port")
        .port()
}

/// `program` run by `systemd-socket-activate` with `listeners` (address, name) and
/// `variables`: what systemd does for a unit with its socket units, executed at the first
/// connection.
fn socket_activated(program: &str, listeners: &[(String, &str)], variables: &[(&'static str, String)]) -> Command {
    let mut command = Command::new("systemd-socket-activate");
    command.env_clear();
    for (address, name) in listeners {
        command
            .arg(format!("--listen={address}"))
            .arg(format!("--fdname={name}"));
    }
    for (name, value) in variables {
        command.arg(format!("--setenv={name}={value}"));
    }
    command.arg(program);
    command
}

/// Output of a run that stopped by itself, stdout and stderr together.
fn failed_run(mut command: Command) -> (Option<i32>, String) {
    let output = command.output().expect("run it");
    (
        output.status.code(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        ),
    )
}

#[tokio::test]
async fn under_systemd_the_role_serves_the_listeners_its_socket_units_pass_and_needs_them() {
    let dir = tempfile::tempdir().expect("a directory");
    let mut base = environment(dir.path());
    base.retain(|(name, _)| !name.ends_with("_LISTEN"));
    let relay = dir.path().join("relay.sock").display().to_string();
    // systemd marks a service's environment with INVOCATION_ID.
    let mut systemd = base.clone();
    systemd.push(("INVOCATION_ID", "0123456789abcdef0123456789abcdef".to_owned()));

    // Without the relay, a private network would leave the browsers nowhere to go.
    let said = refusal(&systemd);
    assert!(
        said.contains("BROWSER_EGRESS_RELAY") && said.contains("steward-browser-egress"),
        "{said}"
    );
    systemd.push(("BROWSER_EGRESS_RELAY", relay.clone()));
    // Without its socket units it would listen inside its private network, unreachable.
    let (code, said) = failed_run(role(&systemd));
    assert_ne!(code, Some(0));
    assert!(said.contains("steward-browser-control.socket"), "{said}");

    let control = format!("127.0.0.1:{}", free_port());
    let handoff = format!("127.0.0.1:{}", free_port());
    let mut child = Role(
        socket_activated(
            env!("CARGO_BIN_EXE_steward-browser"),
            &[(control.clone(), "control"), (handoff.clone(), "handoff")],
            &systemd,
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("systemd-socket-activate (cargo xtask test installs systemd)"),
    );
    let client = reqwest::Client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .expect("a client");
    // The first connection starts the role; it waits in the passed socket's queue meanwhile.
    let deadline = Instant::now() + Duration::from_secs(30);
    let ready = loop {
        match client.get(format!("http://{control}/health/ready")).send().await {
            Ok(answer) => break answer,
            Err(error) => {
                assert!(Instant::now() < deadline, "the activated role never answered: {error}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    };
    assert_eq!(ready.status(), 200);
    let unauthorized = client
        .put(format!("http://{control}/control/v1/tasks/task-1"))
        .json(&serde_json::json!({"origins": ["https://shop.example"]}))
        .send()
        .await
        .expect("the control plane answers");
    assert_eq!(unauthorized.status(), 401);
    let sign_in = client
        .get(format!("http://{handoff}/sign-in"))
        .send()
        .await
        .expect("the handoff listener answers");
    assert_eq!(
        sign_in.status(),
        200,
        "the sign-in page is served on the passed handoff socket"
    );

    child.stops_on_sigterm().await;
}

fn relay_role(variables: &[(&'static str, String)]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_steward-browser-egress"));
    command
        .env_clear()
        .envs(variables.iter().map(|(name, value)| (*name, value.as_str())));
    command
}

/// Sends a `CONNECT` for `authority` to the relay at `path` and returns the answer's head.
async fn connect_through(path: &Path, authority: &str) -> String {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    // A socket's file exists from its bind, a moment before it listens (systemd-socket-activate
    // binds, then listens): a refusal in between is tried again.
    let deadline = Instant::now() + Duration::from_secs(20);
    let mut stream = loop {
        match tokio::net::UnixStream::connect(path).await {
            Ok(stream) => break stream,
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionRefused && Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(error) => panic!("connect to the relay: {error}"),
        }
    };
    stream
        .write_all(format!("CONNECT {authority} HTTP/1.1\r\nHost: {authority}\r\n\r\n").as_bytes())
        .await
        .expect("send");
    let mut answer = Vec::new();
    stream.read_to_end(&mut answer).await.expect("read");
    String::from_utf8_lossy(&answer).into_owned()
}

#[tokio::test]
async fn the_egress_relay_holds_no_secret_listens_owner_only_and_under_systemd_on_its_socket_unit() {
    let dir = tempfile::tempdir().expect("a directory");
    let socket = dir.path().join("relay.sock");
    let mut base = vec![
        ("PATH", std::env::var("PATH").unwrap_or_default()),
        ("BROWSER_EGRESS_SOCKET", socket.display().to_string()),
    ];
    if std::fs::metadata("/proc/self").expect("/proc/self").uid() == 0 {
        base.push(("STEWARD_DEV_ALLOW_ROOT", "1".to_owned()));
    }
    for (name, value) in [
        ("OPENAI_API_KEY", "sk-test"),
        ("BROWSER_CONTROL_CREDENTIAL_FILE", "/etc/steward/credential"),
        ("BROWSER_STORAGE_KEY_FILE", "/etc/steward/key"),
        ("API_TOKEN_FILE", "/etc/steward/token"),
    ] {
        let mut variables = base.clone();
        variables.push((name, value.to_owned()));
        let output = relay_role(&variables).output().expect("run the relay");
        assert_eq!(output.status.code(), Some(2), "{name}: {output:?}");
        let said = String::from_utf8_lossy(&output.stderr);
        assert!(
            said.starts_with("steward-browser-egress: ") && said.contains(name),
            "{name}: {said}"
        );
    }

    // Outside systemd it makes its own socket, owner-only.
    let mut child = Role(
        relay_role(&base)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start the relay"),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while !socket.exists() {
        assert!(Instant::now() < deadline, "the relay made no socket");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(100)).await;
    let mode = std::fs::metadata(&socket).expect("the socket").permissions().mode() & 0o777;
    assert_eq!(mode, 0o600, "only its owner (the browser role's user) may connect");
    let answer = connect_through(&socket, "127.0.0.1:5432").await;
    assert!(answer.contains("Egress-Decision: not_allowed"), "{answer}");
    child.stops_on_sigterm().await;

    // Under systemd: its socket unit's socket, and nothing without it.
    let mut systemd = base.clone();
    systemd.retain(|(name, _)| *name != "BROWSER_EGRESS_SOCKET");
    systemd.push(("INVOCATION_ID", "0123456789abcdef0123456789abcdef".to_owned()));
    let (code, said) = failed_run(relay_role(&systemd));
    assert_ne!(code, Some(0));
    assert!(said.contains("steward-browser-egress.socket"), "{said}");
    let activated = dir.path().join("activated.sock");
    let _child = Role(
        socket_activated(
            env!("CARGO_BIN_EXE_steward-browser-egress"),
            &[(activated.display().to_string(), "relay")],
            &systemd,
        )
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("systemd-socket-activate"),
    );
    let deadline = Instant::now() + Duration::from_secs(20);
    while !activated.exists() {
        assert!(Instant::now() < deadline, "no activated socket");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let answer = connect_through(&activated, "shop.example:25").await;
    assert!(
        answer.starts_with("HTTP/1.1 403 Forbidden") && answer.contains("Egress-Decision: not_allowed"),
        "{answer}"
    );
}

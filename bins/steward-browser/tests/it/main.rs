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

    nix_kill(child.0.id());
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.0.try_wait().expect("poll") {
            break status;
        }
        assert!(Instant::now() < deadline, "the role did not stop on SIGTERM");
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    assert!(status.success(), "{status}");
}

/// A running role, killed if the test ends first.
struct Role(std::process::Child);

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

//! `steward-preflight` against temporary host trees built from the repository's environment
//! templates (`systemd/env/`): a correct host passes, and each kind of mistake produces its
//! `FAIL` line and a non-zero exit.
//!
//! Identities are the host's stock system accounts: `daemon` stands for the application service
//! user and group, `bin` for the ingress user, and `nobody` (with `daemon` as its group) runs
//! preflight as the unprivileged deploy user. Building the trees needs root (chown), as CI has.

use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

use nix::unistd::{Gid, Uid, chown};

mod junk;

const SERVICE: (u32, u32) = (1, 1); // daemon:daemon
const INGRESS: (u32, u32) = (2, 2); // bin:bin
const DEPLOY_UID: u32 = 65534; // nobody

struct Tree {
    _dir: tempfile::TempDir,
    root: PathBuf,
}

/// A valid call configuration.
const CALL_CONFIGURATION: &str = r#"{"version": 1, "account_id": "home", "phone_number": "+15551230000", "public_name": "Alex Rivera", "public_profile": "Alex is a carpenter.", "voice": "maya", "max_duration_minutes": 5, "webhook_url": "https://steward.example.org/webhooks/callprov"}"#;

fn templates() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../systemd/env")
}

fn set_mode(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).expect("chmod");
}

fn set_owner(path: &Path, (uid, gid): (u32, u32)) {
    chown(path, Some(Uid::from_raw(uid)), Some(Gid::from_raw(gid))).expect("chown");
}

impl Tree {
    /// A correct host: every role installed, calling on, a model key for the worker.
    fn new() -> Tree {
        let dir = tempfile::tempdir().expect("tempdir");
        set_mode(dir.path(), 0o755);
        let root = dir.path().to_path_buf();
        let etc = root.join("etc");
        std::fs::create_dir(&etc).expect("etc");
        set_mode(&etc, 0o755);
        let tree = Tree { _dir: dir, root };
        for entry in std::fs::read_dir(templates()).expect("templates") {
            let path = entry.expect("entry").path();
            let text = std::fs::read_to_string(&path).expect("template");
            let text = match path.file_name().and_then(|name| name.to_str()) {
                Some("call-worker.env") => text.replace("AGENT_CALL_ENABLED=0", "AGENT_CALL_ENABLED=1"),
                Some("worker.env") => {
                    text + "AGENT_CALL_ENABLED=1\nCALLPROV_CONFIGURATION_FILE=/etc/steward/callprov-configuration.json\n"
                }
                Some("call-ingress.env") => {
                    text.replace("AGENT_CALL_INGRESS_ENABLED=0", "AGENT_CALL_INGRESS_ENABLED=1")
                }
                Some("api.env") => text
                    .replace("SITE_URL=\n", "SITE_URL=https://steward.example.org/site/\n")
                    .replace("DOCS_URL=\n", "DOCS_URL=https://steward.example.org/docs/\n"),
                _ => text,
            };
            let file = path.file_name().and_then(|name| name.to_str()).expect("name");
            tree.write_env(file, &text);
            // Each role's unit, installed.
            let role = file.strip_suffix(".env").expect("a role's file");
            let units = tree.root.join("units");
            std::fs::create_dir_all(&units).expect("units");
            std::fs::copy(
                Path::new(env!("CARGO_MANIFEST_DIR")).join(format!("../../systemd/steward-{role}.service")),
                units.join(format!("steward-{role}.service")),
            )
            .unwrap_or_else(|error| panic!("install the unit of {role}: {error}"));
        }
        let credentials = tree.credentials();
        std::fs::create_dir(&credentials).expect("credentials");
        set_mode(&credentials, 0o711);
        for (role, name, owner) in [
            ("api", "api-token", SERVICE),
            ("worker", "model-api-key", SERVICE),
            ("call-worker", "callprov-api-key", SERVICE),
            ("call-ingress", "callprov-webhook-secret", INGRESS),
        ] {
            let dir = credentials.join(role);
            std::fs::create_dir(&dir).expect("credential dir");
            set_mode(&dir, 0o711);
            let file = dir.join(name);
            std::fs::write(&file, "secret-material-0123456789").expect("credential");
            set_mode(&file, 0o600);
            set_owner(&file, owner);
        }
        tree.write_configuration(CALL_CONFIGURATION, 0o640);
        let release = tree.release();
        std::fs::create_dir(&release).expect("release");
        set_owner(&release, SERVICE);
        tree
    }

    /// Writes `{config_dir}/callprov-configuration.json` with `text` and `mode` (root's, group
    /// the service group).
    fn write_configuration(&self, text: &str, mode: u32) {
        let path = self.root.join("etc/callprov-configuration.json");
        std::fs::write(&path, text).expect("write the call configuration");
        set_mode(&path, mode);
        set_owner(&path, (0, SERVICE.1));
    }

    fn env(&self, role: &str) -> PathBuf {
        self.root.join("etc").join(format!("{role}.env"))
    }

    fn credentials(&self) -> PathBuf {
        self.root.join("etc/credentials")
    }

    fn credential(&self, role: &str, name: &str) -> PathBuf {
        self.credentials().join(role).join(name)
    }

    fn release(&self) -> PathBuf {
        self.root.join("release")
    }

    fn write_env(&self, file: &str, text: &str) {
        let path = self.root.join("etc").join(file);
        std::fs::write(&path, text).expect("write env");
        set_mode(&path, 0o640);
        set_owner(&path, (0, SERVICE.1));
    }

    /// Rewrites `role`'s environment file with `edit` applied, keeping its owner and mode.
    fn edit_env(&self, role: &str, edit: impl FnOnce(String) -> String) {
        let text = std::fs::read_to_string(self.env(role)).expect("env");
        self.write_env(&format!("{role}.env"), &edit(text));
    }

    fn command(&self, extra: &[&str]) -> Command {
        let mut command = Command::new(env!("CARGO_BIN_EXE_steward-preflight"));
        command
            .arg("--config-dir")
            .arg(self.root.join("etc"))
            .arg("--release")
            .arg(self.release())
            .arg("--units-dir")
            .arg(self.root.join("units"))
            .args([
                "--service-user",
                "daemon",
                "--service-group",
                "daemon",
                "--ingress-user",
                "bin",
            ])
            .args(extra);
        command
    }

    /// Runs preflight as the deploy user; returns (passed, output).
    fn run_as_deploy_user(&self) -> (bool, String) {
        output(self.command(&[]).uid(DEPLOY_UID).gid(SERVICE.1))
    }
}

fn output(command: &mut Command) -> (bool, String) {
    let output = command.output().expect("run steward-preflight");
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let code = output.status.code();
    assert!(code == Some(0) || code == Some(1), "exit {code:?}: {stdout}");
    (output.status.success(), stdout)
}

/// Expects a failing run with a `FAIL` line containing `message`, and a FAIL verdict.
fn expect_fail(tree: &Tree, message: &str) -> String {
    let (passed, stdout) = tree.run_as_deploy_user();
    assert!(!passed, "preflight passed:\n{stdout}");
    assert!(
        stdout
            .lines()
            .any(|line| line.starts_with("FAIL ") && line.contains(message)),
        "no FAIL line containing `{message}`:\n{stdout}"
    );
    assert!(
        stdout
            .trim_end()
            .lines()
            .last()
            .is_some_and(|line| line.starts_with("preflight: FAIL")),
        "{stdout}"
    );
    stdout
}

#[test]
fn a_correct_host_passes_every_check() {
    let tree = Tree::new();
    let (passed, stdout) = tree.run_as_deploy_user();
    assert!(passed, "{stdout}");
    assert!(
        stdout
            .lines()
            .all(|line| line.starts_with("OK   ") || line.starts_with("preflight: OK")),
        "{stdout}"
    );
    // Every installed role's file and every required credential was looked at.
    for needle in [
        "call-ingress.env",
        "callprov-webhook-secret",
        "model-api-key",
        "api-token",
        "release",
    ] {
        assert!(stdout.contains(needle), "{needle} checked:\n{stdout}");
    }
}

#[test]
fn the_maintenance_role_is_required_with_its_own_login_and_its_unit() {
    let tree = Tree::new();
    let (_, stdout) = tree.run_as_deploy_user();
    assert!(
        stdout.contains(
            "OK   role maintenance: logs in as `steward_maintenance`, unit steward-maintenance.service installed"
        ),
        "{stdout}"
    );

    tree.edit_env("maintenance", |text| {
        text.replace("steward_maintenance@", "steward_api@")
    });
    expect_fail(
        &tree,
        "DATABASE_URL logs in as `steward_api`, not the role's own `steward_maintenance`",
    );
    tree.edit_env("maintenance", |text| {
        text.replace("steward_api@", "steward_maintenance@")
    });

    std::fs::remove_file(tree.root.join("units/steward-maintenance.service")).expect("remove the unit");
    expect_fail(&tree, "steward-maintenance.service is not installed");

    std::fs::remove_file(tree.env("maintenance")).expect("remove the environment");
    expect_fail(&tree, "maintenance.env: cannot stat it");
}

#[test]
fn the_public_site_needs_https_addresses_root_owned_templates_and_an_address_with_mail_on() {
    let tree = Tree::new();
    let (_, stdout) = tree.run_as_deploy_user();
    assert!(
        stdout.contains("OK   public site at https://steward.example.org/site/: addresses and templates"),
        "{stdout}"
    );

    tree.edit_env("api", |text| {
        text.replace(
            "SITE_URL=https://steward.example.org/site/",
            "SITE_URL=http://steward.example.org/site/",
        )
    });
    expect_fail(&tree, "SITE_URL must be https://");
    tree.edit_env("api", |text| {
        text.replace(
            "SITE_URL=http://steward.example.org/site/",
            "SITE_URL=https://steward.example.org/v1/",
        )
    });
    expect_fail(&tree, "SITE_URL path `/v1/` is the API's or the web client's");

    // Mail on without a site: the provider's verification has nothing to read.
    tree.edit_env("api", |text| {
        text.replace("SITE_URL=https://steward.example.org/v1/", "SITE_URL=")
    });
    let (passed, stdout) = tree.run_as_deploy_user();
    assert!(passed, "a site address is optional while mail is off:\n{stdout}");
    tree.edit_env("api", |text| {
        text.replace("AGENT_EMAIL_ENABLED=0", "AGENT_EMAIL_ENABLED=1")
    });
    expect_fail(&tree, "SITE_URL is unset while mail is on");
    tree.edit_env("api", |text| {
        text.replace("AGENT_EMAIL_ENABLED=1", "AGENT_EMAIL_ENABLED=0")
            .replace("SITE_URL=\n", "SITE_URL=https://steward.example.org/site/\n")
    });

    let templates = tree.root.join("etc/site");
    std::fs::create_dir(&templates).expect("templates");
    set_mode(&templates, 0o755);
    std::fs::write(templates.join("home.html"), "<h1>{{deployment}}</h1>").expect("template");
    set_mode(&templates.join("home.html"), 0o644);
    let dir = templates.display().to_string();
    tree.edit_env("api", |text| {
        text.replace("SITE_TEMPLATES_DIR=", &format!("SITE_TEMPLATES_DIR={dir}"))
    });
    let (passed, stdout) = tree.run_as_deploy_user();
    assert!(passed, "root's templates, readable by the group:\n{stdout}");
    set_mode(&templates.join("home.html"), 0o664);
    expect_fail(&tree, "home.html must be root's and writable by root only");
    set_mode(&templates.join("home.html"), 0o600);
    expect_fail(&tree, "home.html is not readable by the service group");
}

#[test]
fn an_environment_file_with_the_wrong_mode_fails() {
    let tree = Tree::new();
    set_mode(&tree.env("api"), 0o644);
    expect_fail(&tree, "mode 0644, expected 0640");
}

#[test]
fn an_environment_file_with_the_wrong_owner_or_group_fails() {
    let tree = Tree::new();
    set_owner(&tree.env("worker"), (SERVICE.0, INGRESS.1));
    let stdout = expect_fail(&tree, "owned by uid 1, expected root");
    assert!(stdout.contains("group gid 2, expected `daemon`"), "{stdout}");
}

#[test]
fn an_unreadable_calling_role_environment_fails_with_the_spec_message() {
    let tree = Tree::new();
    set_mode(&tree.env("call-worker"), 0o600);
    expect_fail(&tree, "calling role environment is not readable by the deploy user");
}

#[test]
fn an_untraversable_call_credential_directory_fails_with_the_spec_message() {
    let tree = Tree::new();
    set_mode(&tree.credentials().join("call-ingress"), 0o700);
    let stdout = expect_fail(
        &tree,
        "calling role credential directory is not traversable by the deploy user",
    );
    assert!(stdout.contains("has mode 0700, expected 0711"), "{stdout}");
}

#[test]
fn a_symlinked_credential_fails() {
    let tree = Tree::new();
    let token = tree.credential("api", "api-token");
    let real = tree.credentials().join("api/real-token");
    std::fs::rename(&token, &real).expect("move");
    std::os::unix::fs::symlink(&real, &token).expect("symlink");
    expect_fail(&tree, "is a symbolic link");
}

#[test]
fn a_group_readable_credential_fails() {
    let tree = Tree::new();
    set_mode(&tree.credential("worker", "model-api-key"), 0o640);
    expect_fail(&tree, "mode 0640, expected 0600");
}

#[test]
fn a_credential_owned_by_the_wrong_user_fails() {
    let tree = Tree::new();
    // The signing secret belongs to the ingress user, not the service user.
    set_owner(&tree.credential("call-ingress", "callprov-webhook-secret"), SERVICE);
    expect_fail(&tree, "owned by uid 1, expected `bin`");
}

#[test]
fn a_credential_with_an_extended_acl_entry_fails() {
    let tree = Tree::new();
    let key = tree.credential("call-worker", "callprov-api-key");
    let status = Command::new("setfacl")
        .args(["-m", "u:65534:r"])
        .arg(&key)
        .status()
        .expect("run setfacl (cargo xtask test installs the acl package)");
    assert!(status.success());
    expect_fail(&tree, "extended ACL entries (user:65534, mask)");
}

#[test]
fn a_missing_required_credential_fails() {
    let tree = Tree::new();
    std::fs::remove_file(tree.credential("call-ingress", "callprov-webhook-secret")).expect("remove");
    expect_fail(&tree, "callprov-webhook-secret is an owner-only regular file: missing");
}

#[test]
fn a_release_not_owned_by_the_service_user_fails() {
    let tree = Tree::new();
    set_owner(&tree.release(), (0, 0));
    expect_fail(
        &tree,
        "not `daemon` (uid 1); stop and add a reviewed credential handoff",
    );
}

#[test]
fn a_call_configuration_that_is_invalid_writable_or_named_differently_fails() {
    let tree = Tree::new();
    tree.write_configuration(&CALL_CONFIGURATION.replace("\"version\": 1", "\"version\": 2"), 0o640);
    expect_fail(&tree, "the call configuration's `version` must be 1");
    let tree = Tree::new();
    tree.write_configuration(CALL_CONFIGURATION, 0o660);
    expect_fail(&tree, "must be writable by its owner only (mode 0660)");
    let tree = Tree::new();
    tree.edit_env("worker", |text| {
        text.replace("/etc/steward/callprov-configuration.json", "/etc/other.json")
    });
    expect_fail(
        &tree,
        "CALLPROV_CONFIGURATION_FILE differs between worker and call-worker",
    );
    let tree = Tree::new();
    std::fs::remove_file(tree.root.join("etc/callprov-configuration.json")).expect("remove");
    expect_fail(&tree, "callprov-configuration.json is missing");
}

#[test]
fn unequal_notification_flags_fail() {
    let tree = Tree::new();
    tree.edit_env("api", |text| {
        text.replace("AGENT_NOTIFICATION_API_ENABLED=0", "AGENT_NOTIFICATION_API_ENABLED=1")
    });
    expect_fail(&tree, "api has API=\"1\" but dispatch=\"0\"");
    let tree = Tree::new();
    for role in ["api", "worker"] {
        tree.edit_env(role, |text| {
            text.replace("AGENT_NOTIFICATION_API_ENABLED=0", "AGENT_NOTIFICATION_API_ENABLED=1")
                .replace(
                    "AGENT_NOTIFICATION_DISPATCH_ENABLED=0",
                    "AGENT_NOTIFICATION_DISPATCH_ENABLED=1",
                )
        });
    }
    expect_fail(&tree, "notification flags are equal in every environment file");
}

#[test]
fn it_makes_a_vapid_key_once_and_prints_its_public_half() {
    let dir = tempfile::tempdir().expect("dir");
    let path = dir.path().join("vapid-key");
    let run = |flag: &str| {
        Command::new(env!("CARGO_BIN_EXE_steward-preflight"))
            .args([flag, path.to_str().expect("path")])
            .output()
            .expect("run")
    };
    let made = run("--generate-vapid-key");
    assert!(made.status.success());
    let line = String::from_utf8(made.stdout).expect("utf-8");
    assert!(
        line.starts_with("WEB_PUSH_PUBLIC_KEY=B") && line.trim().len() == 20 + 87,
        "{line}"
    );
    let read = run("--vapid-public-key");
    assert_eq!(String::from_utf8(read.stdout).expect("utf-8"), line);
    let again = run("--generate-vapid-key");
    assert!(!again.status.success(), "an existing key is never replaced");
    let stderr = String::from_utf8(again.stderr).expect("utf-8");
    assert!(
        stderr.starts_with("steward-preflight: ") && stderr.lines().count() == 1,
        "{stderr}"
    );
    assert_eq!(
        String::from_utf8(run("--vapid-public-key").stdout).expect("utf-8"),
        line
    );
}

#[test]
fn web_push_on_in_notify_alone_or_without_a_provider_fails() {
    let on = |text: String| {
        text.replace("AGENT_NOTIFICATION_API_ENABLED=0", "AGENT_NOTIFICATION_API_ENABLED=1")
            .replace(
                "AGENT_NOTIFICATION_DISPATCH_ENABLED=0",
                "AGENT_NOTIFICATION_DISPATCH_ENABLED=1",
            )
    };
    let tree = Tree::new();
    for role in ["api", "worker", "notify"] {
        tree.edit_env(role, |text| on(text.to_owned()));
    }
    expect_fail(
        &tree,
        "notify delivers through neither APNs (APNS_TOPIC) nor Web Push (WEB_PUSH_SUBJECT)",
    );
    tree.edit_env("notify", |text| {
        format!("{text}WEB_PUSH_SUBJECT=mailto:owner@example.test\n")
    });
    expect_fail(
        &tree,
        "notify delivers Web Push but api has no WEB_PUSH_PUBLIC_KEY: no browser can subscribe",
    );
    expect_fail(&tree, "notify/vapid-key is an owner-only regular file");
}

#[test]
fn unsubscribe_on_in_one_file_only_or_the_demo_endpoint_fails() {
    let tree = Tree::new();
    tree.edit_env("worker", |text| format!("{text}AGENT_EMAIL_UNSUBSCRIBE_ENABLED=1\n"));
    expect_fail(&tree, "AGENT_EMAIL_UNSUBSCRIBE_ENABLED differs between api and worker");
    let tree = Tree::new();
    tree.edit_env("worker", |text| {
        format!("{text}EMAIL_UNSUBSCRIBE_LOCAL_ENDPOINT=127.0.0.1:8443\n")
    });
    expect_fail(
        &tree,
        "worker sets EMAIL_UNSUBSCRIBE_LOCAL_ENDPOINT, which is for the offline demo only",
    );
}

#[test]
fn call_notifications_on_in_one_file_only_fail() {
    let tree = Tree::new();
    tree.edit_env("call-worker", |text| {
        text.replace(
            "AGENT_CALL_NOTIFICATIONS_ENABLED=0",
            "AGENT_CALL_NOTIFICATIONS_ENABLED=1",
        )
    });
    expect_fail(
        &tree,
        "AGENT_CALL_NOTIFICATIONS_ENABLED is 1 in [\"call-worker\"] but not in api",
    );
}

#[test]
fn a_credential_path_in_the_scheduler_environment_fails() {
    let tree = Tree::new();
    tree.edit_env("schedule", |text| {
        text + "MAIL_READ_CREDENTIAL_FILE=/etc/steward/mail/mail-read.json\n"
    });
    expect_fail(
        &tree,
        "MAIL_READ_CREDENTIAL_FILE does not belong in the scheduler environment",
    );
}

#[test]
fn partial_mail_enablement_fails() {
    let tree = Tree::new();
    tree.edit_env("api", |text| {
        text.replace("AGENT_EMAIL_ENABLED=0", "AGENT_EMAIL_ENABLED=1").replace(
            "MAIL_READ_CREDENTIAL_FILE=\n",
            "MAIL_READ_CREDENTIAL_FILE=/etc/steward/mail/mail-read.json\n",
        )
    });
    expect_fail(&tree, "api: partial mail enablement");
}

#[test]
fn mail_paths_with_the_flag_off_fail() {
    let tree = Tree::new();
    tree.edit_env("worker", |text| {
        text.replace(
            "MAIL_ACCOUNTS_FILE=\n",
            "MAIL_ACCOUNTS_FILE=/etc/steward/mail/accounts.json\n",
        )
    });
    expect_fail(
        &tree,
        "worker: mail paths are configured while AGENT_EMAIL_ENABLED is off",
    );
}

#[test]
fn a_model_key_in_a_calling_role_environment_fails() {
    let tree = Tree::new();
    tree.edit_env("call-worker", |text| text + "OPENAI_API_KEY=sk-test\n");
    expect_fail(&tree, "OPENAI_API_KEY is set: a call role never holds a model key");
}

#[test]
fn the_call_provider_key_path_in_the_ingress_environment_fails() {
    let tree = Tree::new();
    tree.edit_env("call-ingress", |text| {
        text + "CALLPROV_API_KEY_FILE=/etc/steward/credentials/x\n"
    });
    expect_fail(
        &tree,
        "CALLPROV_API_KEY_FILE is set: the ingress listener never holds the call-provider API key",
    );
}

#[test]
fn an_ingress_user_inside_the_application_group_fails() {
    let tree = Tree::new();
    let (passed, stdout) = output(
        tree.command(&["--ingress-user", "daemon"])
            .uid(DEPLOY_UID)
            .gid(SERVICE.1),
    );
    assert!(!passed);
    assert!(
        stdout.contains("the ingress user `daemon` is in the application group `daemon`"),
        "{stdout}"
    );
}

#[test]
fn running_as_root_fails() {
    let tree = Tree::new();
    if !Uid::effective().is_root() {
        return; // The tree needs root to build; without it there is nothing to check.
    }
    let (passed, stdout) = output(&mut tree.command(&[]));
    assert!(!passed);
    assert!(
        stdout.contains("FAIL preflight runs as an unprivileged deploy user: running as root"),
        "{stdout}"
    );
}

#[test]
fn mail_credentials_are_inspected_as_the_service_user() {
    let tree = Tree::new();
    let mail = tree.root.join("etc/mail");
    std::fs::create_dir(&mail).expect("mail dir");
    set_mode(&mail, 0o755);
    let account = mail.join("default");
    std::fs::create_dir(&account).expect("account dir");
    set_mode(&account, 0o700);
    set_owner(&account, SERVICE);
    let mut paths = Vec::new();
    for name in ["mail-read.json", "mail-write.json", "mail-send.json"] {
        let path = account.join(name);
        std::fs::write(&path, "{}").expect("document");
        set_mode(&path, 0o600);
        set_owner(&path, SERVICE);
        paths.push(path.display().to_string());
    }
    let manifest = mail.join("accounts.json");
    std::fs::write(
        &manifest,
        format!(
            r#"{{"version": 1, "default_account": "default", "accounts": [{{"account_id": "default",
                "read_credential_file": "{}", "write_credential_file": "{}", "send_credential_file": "{}"}}]}}"#,
            paths[0], paths[1], paths[2]
        ),
    )
    .expect("manifest");
    set_mode(&manifest, 0o644);
    set_owner(&manifest, SERVICE);
    let enable = |text: String| {
        text.replace("AGENT_EMAIL_ENABLED=0", "AGENT_EMAIL_ENABLED=1").replace(
            "MAIL_ACCOUNTS_FILE=\n",
            &format!("MAIL_ACCOUNTS_FILE={}\n", manifest.display()),
        )
    };
    for role in ["api", "worker", "async-worker", "maintenance", "schedule"] {
        tree.edit_env(role, enable);
    }
    // As the credentials' owner, every check passes.
    let (passed, stdout) = output(tree.command(&[]).uid(SERVICE.0).gid(SERVICE.1));
    assert!(passed, "{stdout}");
    assert!(
        stdout.contains("OK   mail credentials of account `default` are owner-only documents"),
        "{stdout}"
    );
    // The deploy user cannot look inside the 0700 directory, and says so.
    expect_fail(
        &tree,
        "run preflight as the service user that owns the mail credentials",
    );
    // A document readable by the group fails.
    set_mode(Path::new(&paths[2]), 0o640);
    let (passed, stdout) = output(tree.command(&[]).uid(SERVICE.0).gid(SERVICE.1));
    assert!(!passed);
    assert!(stdout.contains("mail-send.json: mode 0640, expected 0600"), "{stdout}");
}

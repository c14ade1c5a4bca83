//! The systemd units in `systemd/`: one hardened unit per role, each scored by
//! `systemd-analyze security --offline=true` at an exposure of 2.0 or less, plus the structural
//! promises the score does not capture (readiness, a user per role, the ingress user outside the
//! application group, loopback-only ingress, secrets only as credentials).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Every role's unit, and the binary it runs.
pub const ROLES: [(&str, &str); 10] = [
    ("api", "steward-api"),
    ("worker", "steward-worker"),
    ("async-worker", "steward-async-worker"),
    ("schedule", "steward-schedule"),
    ("notify", "steward-notify"),
    ("maintenance", "steward-maintenance"),
    ("call-ingress", "steward-call-ingress"),
    ("call-worker", "steward-call-worker"),
    ("browser", "steward-browser"),
    ("browser-egress", "steward-browser-egress"),
];

#[test]
fn every_unit_runs_a_binary_the_workspace_builds() {
    let mut units = Vec::new();
    for entry in std::fs::read_dir(systemd_dir()).expect("systemd/") {
        let path = entry.expect("entry").path();
        let Some(role) = path
            .file_name()
            .and_then(|name| name.to_str())
            .and_then(|name| name.strip_prefix("steward-"))
            .and_then(|name| name.strip_suffix(".service"))
        else {
            continue;
        };
        let settings = service_settings(role);
        let exec = one(&settings, "ExecStart", role);
        let binary = exec
            .split_whitespace()
            .next()
            .and_then(|program| program.rsplit('/').next())
            .unwrap_or_default();
        assert!(
            crate::bin_targets().contains(binary),
            "steward-{role}.service runs `{binary}`, which no crate of the workspace builds"
        );
        units.push(role.to_owned());
    }
    units.sort();
    let mut listed: Vec<String> = ROLES.iter().map(|(role, _)| (*role).to_owned()).collect();
    listed.sort();
    assert_eq!(
        units, listed,
        "every unit in systemd/ is one of ROLES, and each has its unit"
    );
}

const MAX_EXPOSURE: f64 = 2.0;

fn systemd_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../systemd")
}

fn unit_path(role: &str) -> PathBuf {
    systemd_dir().join(format!("steward-{role}.service"))
}

/// The `[Service]` settings of a unit: key → every value given, in order.
fn service_settings(role: &str) -> BTreeMap<String, Vec<String>> {
    section_settings(&unit_path(role), "[Service]")
}

/// The settings of one section of the unit file at `path`.
fn section_settings(path: &Path, wanted: &str) -> BTreeMap<String, Vec<String>> {
    let role = path.display();
    let text = std::fs::read_to_string(path).unwrap_or_else(|error| panic!("{role}: {error}"));
    let mut section = "";
    let mut settings: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for line in text.lines().map(str::trim) {
        if line.starts_with('#') || line.is_empty() {
            continue;
        }
        if line.starts_with('[') {
            section = line;
            continue;
        }
        if section == wanted {
            let (key, value) = line.split_once('=').unwrap_or_else(|| panic!("{role}: `{line}`"));
            settings.entry(key.to_owned()).or_default().push(value.to_owned());
        }
    }
    settings
}

fn one<'a>(settings: &'a BTreeMap<String, Vec<String>>, key: &str, role: &str) -> &'a str {
    match settings.get(key).map(Vec::as_slice) {
        Some([value]) => value,
        other => panic!("{role}: {key} should be set once, found {other:?}"),
    }
}

#[test]
fn every_unit_scores_an_exposure_of_two_or_less() {
    let mut scores = Vec::new();
    for (role, _) in ROLES {
        let path = unit_path(role);
        let output = Command::new("systemd-analyze")
            .args(["security", "--offline=true", "--no-pager"])
            .arg(&path)
            .output()
            .expect("run systemd-analyze (cargo xtask test installs systemd when it is missing)");
        let stdout = String::from_utf8_lossy(&output.stdout);
        let score: f64 = stdout
            .lines()
            .find_map(|line| {
                line.split_once("Overall exposure level for ")?
                    .1
                    .split_once(": ")?
                    .1
                    .split_whitespace()
                    .next()?
                    .parse()
                    .ok()
            })
            .unwrap_or_else(|| {
                panic!(
                    "no exposure level for {role}: {stdout}{}",
                    String::from_utf8_lossy(&output.stderr)
                )
            });
        scores.push((role, score));
    }
    let too_exposed: Vec<_> = scores.iter().filter(|(_, score)| *score > MAX_EXPOSURE).collect();
    assert!(
        too_exposed.is_empty(),
        "units above {MAX_EXPOSURE}: {too_exposed:?} (all: {scores:?})"
    );
}

#[test]
fn units_are_notify_typed_confined_and_run_as_their_own_users() {
    let mut users = BTreeSet::new();
    for (role, binary) in ROLES {
        let settings = service_settings(role);
        assert_eq!(
            one(&settings, "Type", role),
            "notify",
            "{role}: the role calls sd_notify READY"
        );
        assert!(
            one(&settings, "WatchdogSec", role).ends_with('s'),
            "{role}: the watchdog is fed"
        );
        assert!(
            one(&settings, "ExecStart", role).ends_with(&format!("/bin/{binary}")),
            "{role} runs {binary}"
        );
        assert_eq!(
            one(&settings, "EnvironmentFile", role),
            format!("/etc/steward/{role}.env")
        );
        let user = one(&settings, "User", role);
        assert!(
            users.insert(user.to_owned()),
            "{role}: user {user} is not shared with another role"
        );
        assert_ne!(user, "root");
        assert_ne!(user, "steward", "no daemon runs as the application service user");
        assert_eq!(
            one(&settings, "CapabilityBoundingSet", role),
            "",
            "{role}: empty bounding set"
        );
        assert_eq!(one(&settings, "ProtectSystem", role), "strict");
        assert_eq!(one(&settings, "NoNewPrivileges", role), "yes");
        assert_eq!(one(&settings, "UMask", role), "0027");
        assert!(
            settings["SystemCallFilter"]
                .iter()
                .any(|value| value.split_whitespace().next() == Some("@system-service")),
            "{role}: SystemCallFilter=@system-service"
        );
        assert!(settings.contains_key("RestrictAddressFamilies"), "{role}");
        assert!(settings.contains_key("IPAddressDeny"), "{role}");
        // Secrets arrive as credentials: any *_FILE variable the unit sets points into the
        // credentials directory and is loaded by a LoadCredential= line.
        let loaded: BTreeSet<String> = settings
            .get("LoadCredential")
            .into_iter()
            .flatten()
            .map(|value| value.split_once(':').expect("name:path").0.to_owned())
            .collect();
        for environment in settings.get("Environment").into_iter().flatten() {
            let (name, value) = environment.split_once('=').expect("NAME=value");
            assert!(
                name.ends_with("_FILE"),
                "{role}: only credential paths are set inline, found {name}"
            );
            let credential = value
                .strip_prefix("%d/")
                .unwrap_or_else(|| panic!("{role}: {name} is not a credential"));
            assert!(loaded.contains(credential), "{role}: {credential} is loaded");
        }
    }
}

#[test]
fn the_ingress_listener_is_loopback_only_and_outside_the_application_group() {
    let settings = service_settings("call-ingress");
    assert_eq!(one(&settings, "IPAddressDeny", "call-ingress"), "any");
    assert_eq!(one(&settings, "IPAddressAllow", "call-ingress"), "localhost");
    let group = one(&settings, "Group", "call-ingress");
    assert_ne!(group, "steward", "the ingress user is not in the application group");
    assert!(!settings.contains_key("SupplementaryGroups"));
    let credentials = &settings["LoadCredential"];
    assert_eq!(credentials.len(), 1, "the signing secret only: {credentials:?}");
    assert!(credentials[0].starts_with("callprov-webhook-secret:"));

    let sysusers = std::fs::read_to_string(systemd_dir().join("sysusers.d/steward.conf")).expect("sysusers");
    let ingress_line = sysusers
        .lines()
        .find(|line| line.starts_with("u steward-ingress"))
        .expect("the ingress user");
    assert!(ingress_line.contains("-:steward-ingress"), "{ingress_line}");
    assert!(
        !sysusers.lines().any(|line| line.starts_with("m steward-ingress")),
        "no extra membership for the ingress user"
    );
}

#[test]
fn every_listener_has_room_for_its_connection_cap() {
    // Each connection is a file descriptor; the role raises its soft limit to the unit's hard
    // one and keeps its cap (1024 by default) under it, with room for the pool and files.
    for role in ["api", "call-ingress"] {
        let settings = service_settings(role);
        let limit: u64 = one(&settings, "LimitNOFILE", role).parse().expect("a number");
        assert!(limit >= 1024 + 128, "{role}: LimitNOFILE={limit}");
    }
}

#[test]
fn every_role_has_an_environment_template_without_secrets() {
    // Every role preflight knows has an environment template.
    for role in preflight::ROLES {
        let path = systemd_dir().join(format!("env/{role}.env"));
        let text = std::fs::read_to_string(&path).unwrap_or_else(|error| panic!("{}: {error}", path.display()));
        for line in text
            .lines()
            .filter(|line| !line.starts_with('#') && !line.trim().is_empty())
        {
            let (name, value) = line.split_once('=').unwrap_or_else(|| panic!("{role}: `{line}`"));
            assert!(
                !name.ends_with("_API_KEY") && !name.contains("SECRET") && !name.ends_with("_TOKEN"),
                "{role}: {name} would be an inline secret"
            );
            if name.ends_with("_KEY_FILE") || name.ends_with("SECRET_FILE") || name == "API_TOKEN_FILE" {
                panic!("{role}: {name}={value}: secret paths are set by the unit, as credentials");
            }
        }
    }
}

#[test]
fn the_browser_role_has_a_private_network_its_listeners_passed_in_and_one_relay_out() {
    let browser = service_settings("browser");
    assert_eq!(one(&browser, "PrivateNetwork", "browser"), "yes");
    assert_eq!(one(&browser, "IPAddressDeny", "browser"), "any");
    assert_eq!(one(&browser, "IPAddressAllow", "browser"), "localhost");
    // Its listeners are bound outside by socket units, one name each, on loopback.
    let sockets: Vec<&str> = one(&browser, "Sockets", "browser").split_whitespace().collect();
    let mut names = Vec::new();
    for socket in &sockets {
        let settings = section_settings(&systemd_dir().join(socket), "[Socket]");
        let listen = one(&settings, "ListenStream", socket);
        assert!(listen.starts_with("127.0.0.1:"), "{socket}: {listen}");
        assert_eq!(one(&settings, "Service", socket), "steward-browser.service");
        names.push(one(&settings, "FileDescriptorName", socket).to_owned());
        assert_eq!(*socket, format!("steward-browser-{}.socket", names[names.len() - 1]));
    }
    names.sort();
    assert_eq!(names, ["control", "handoff"]);
    // The relay's socket: only the browser role's user may open it, and the role's
    // environment points its proxy there.
    let relay_socket = section_settings(&systemd_dir().join("steward-browser-egress.socket"), "[Socket]");
    let path = one(&relay_socket, "ListenStream", "relay socket");
    assert_eq!(one(&relay_socket, "FileDescriptorName", "relay socket"), "relay");
    assert_eq!(
        one(&relay_socket, "SocketUser", "relay socket"),
        one(&browser, "User", "browser")
    );
    assert_eq!(one(&relay_socket, "SocketMode", "relay socket"), "0600");
    let environment = std::fs::read_to_string(systemd_dir().join("env/browser.env")).expect("browser.env");
    assert!(
        environment
            .lines()
            .any(|line| line == format!("BROWSER_EGRESS_RELAY={path}")),
        "browser.env sends the proxy to {path}"
    );
    // The relay holds nothing and reaches none of the host's networks.
    let relay = service_settings("browser-egress");
    assert!(!relay.contains_key("LoadCredential"), "the relay holds no secret");
    assert_eq!(
        one(&relay, "Sockets", "browser-egress"),
        "steward-browser-egress.socket"
    );
    let denied = one(&relay, "IPAddressDeny", "browser-egress");
    for range in [
        "localhost",
        "link-local",
        "10.0.0.0/8",
        "172.16.0.0/12",
        "192.168.0.0/16",
        "fc00::/7",
    ] {
        assert!(denied.split_whitespace().any(|value| value == range), "{range}");
    }
    let sysusers = std::fs::read_to_string(systemd_dir().join("sysusers.d/steward.conf")).expect("sysusers");
    for user in ["steward-browser", "steward-browser-egress"] {
        assert!(
            sysusers.lines().any(|line| line.starts_with(&format!("u {user} "))),
            "{user} is a user of its own"
        );
    }
}

/// Preflight checks that each role's environment logs in as its own login: the same logins the
/// grants are made for, and each role's template names it.
#[test]
fn preflight_knows_each_roles_login_as_the_grants_do() {
    let logins: Vec<&str> = store::policies::ROLE_LOGINS.iter().map(|(_, login)| *login).collect();
    let known: Vec<&str> = preflight::LOGINS.iter().map(|(_, login)| *login).collect();
    assert_eq!(known, logins);
    for (role, login) in preflight::LOGINS {
        assert!(preflight::ROLES.contains(&role), "{role}");
        let template = std::fs::read_to_string(systemd_dir().join(format!("env/{role}.env"))).expect("template");
        assert!(
            template.contains(&format!("DATABASE_URL=postgres://{login}@")),
            "{role}.env logs in as {login}"
        );
    }
}

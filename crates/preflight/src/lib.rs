//! Host preflight: what must hold on a host before roles are (re)started, checked as the
//! unprivileged deploy identity. Environment files are read; credentials are inspected with
//! `stat` and their ACL attribute, never opened. Every check is one line, `OK` or `FAIL`, and
//! the verdict is `FAIL` when any check fails.

mod calls;
mod env_file;
mod junk;
mod roles;
pub mod vapid;

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::ErrorKind;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

use domain::mail_environment::MailEnvironment;
use hardening::environment::{RoleKind, refused};
use nix::unistd::{AccessFlags, Group, Uid, User, access};

pub use env_file::parse_env_file;
pub use roles::LOGINS;

/// The spec's message when a call role's environment file cannot be read by the deploy user.
pub const CALL_ENV_UNREADABLE: &str = "calling role environment is not readable by the deploy user";
/// The spec's message when a directory above a call credential cannot be traversed.
pub const CALL_CREDENTIAL_DIR_UNTRAVERSABLE: &str =
    "calling role credential directory is not traversable by the deploy user";

/// Every role, as named by its unit (`steward-<role>.service`) and environment file.
pub const ROLES: [&str; 8] = [
    "api",
    "worker",
    "async-worker",
    "schedule",
    "notify",
    "maintenance",
    "call-worker",
    "call-ingress",
];
const CALL_ROLES: [&str; 2] = ["call-worker", "call-ingress"];
/// The roles every host runs whatever its features: the API, and maintenance (without it
/// nothing expires: artifact bytes, call transcripts, idempotency records, ...).
const ALWAYS_INSTALLED: [&str; 2] = ["api", "maintenance"];
const APPLICATION_MAIL_ROLES: [&str; 4] = ["api", "worker", "async-worker", "maintenance"];
const NOTIFICATION_FLAGS: [&str; 2] = ["AGENT_NOTIFICATION_API_ENABLED", "AGENT_NOTIFICATION_DISPATCH_ENABLED"];

/// Where things live on the host, and who owns them.
#[derive(Clone, Debug)]
pub struct Host {
    /// Environment files, `<role>.env` (default `/etc/steward`).
    pub config_dir: PathBuf,
    /// Credentials, `<role>/<name>`, as the units' `LoadCredential=` lines name them (default
    /// `/etc/steward/credentials`).
    pub credentials_dir: PathBuf,
    /// The installed release (default `/opt/steward/current`).
    pub release: PathBuf,
    /// The application service user: owns the release and the credentials (default `steward`).
    pub service_user: String,
    /// The service group of the environment files (default `steward`).
    pub service_group: String,
    /// The call-ingress listener's user: owns the webhook signing secret (default
    /// `steward-ingress`).
    pub ingress_user: String,
    /// Where the units and their drop-ins are installed (default `/etc/systemd/system`).
    pub units_dir: PathBuf,
}

impl Default for Host {
    fn default() -> Host {
        Host {
            config_dir: PathBuf::from("/etc/steward"),
            credentials_dir: PathBuf::from("/etc/steward/credentials"),
            release: PathBuf::from("/opt/steward/current"),
            service_user: "steward".into(),
            service_group: "steward".into(),
            ingress_user: "steward-ingress".into(),
            units_dir: PathBuf::from("/etc/systemd/system"),
        }
    }
}

/// One line of the report.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Check {
    pub ok: bool,
    pub subject: String,
    /// Why it failed (empty when it passed).
    pub reason: String,
}

/// Every check, in the order they ran.
#[derive(Clone, Debug, Default)]
pub struct Report {
    pub checks: Vec<Check>,
}

impl Report {
    fn check(&mut self, subject: impl Into<String>, failures: Vec<String>) {
        self.checks.push(Check {
            ok: failures.is_empty(),
            subject: subject.into(),
            reason: failures.join("; "),
        });
    }

    pub fn passed(&self) -> bool {
        self.checks.iter().all(|check| check.ok)
    }

    /// One line per check, then the verdict.
    pub fn render(&self) -> String {
        let mut out = String::new();
        for check in &self.checks {
            if check.ok {
                let _ = writeln!(out, "OK   {}", check.subject);
            } else {
                let _ = writeln!(out, "FAIL {}: {}", check.subject, check.reason);
            }
        }
        let failed = self.checks.iter().filter(|check| !check.ok).count();
        if failed == 0 {
            let _ = writeln!(out, "preflight: OK ({} checks)", self.checks.len());
        } else {
            let _ = writeln!(out, "preflight: FAIL ({failed} of {} checks failed)", self.checks.len());
        }
        out
    }
}

struct Identities {
    service: Option<User>,
    group: Option<Group>,
    ingress: Option<User>,
}

/// Runs every check against `host`.
pub fn run(host: &Host) -> Report {
    let mut report = Report::default();
    let identities = identities(host, &mut report);
    release(host, &identities, &mut report);
    let environments = environments(host, &identities, &mut report);
    environment_rules(&environments, &mut report);
    roles::installed(host, &environments, &mut report);
    roles::site(&environments, &mut report);
    credentials(host, &identities, &environments, &mut report);
    mail_credentials(&identities, &environments, &mut report);
    junk::junk(host, &environments, &mut report);
    calls::configuration(host, &environments, &mut report);
    report
}

fn identities(host: &Host, report: &mut Report) -> Identities {
    let running = Uid::effective();
    report.check(
        "preflight runs as an unprivileged deploy user",
        if running.is_root() {
            vec!["running as root; run it as the deploy user, without elevated rights".into()]
        } else {
            Vec::new()
        },
    );
    let service = User::from_name(&host.service_user).ok().flatten();
    let group = Group::from_name(&host.service_group).ok().flatten();
    let ingress = User::from_name(&host.ingress_user).ok().flatten();
    let mut failures = Vec::new();
    if service.is_none() {
        failures.push(format!("no user `{}`", host.service_user));
    }
    if group.is_none() {
        failures.push(format!("no group `{}`", host.service_group));
    }
    match (&ingress, &group) {
        (None, _) => failures.push(format!("no user `{}`", host.ingress_user)),
        (Some(ingress), Some(group)) => {
            if ingress.gid == group.gid || group.mem.contains(&ingress.name) {
                failures.push(format!(
                    "the ingress user `{}` is in the application group `{}`",
                    ingress.name, group.name
                ));
            }
        }
        (Some(_), None) => {}
    }
    report.check(
        format!(
            "service user `{}`, group `{}` and ingress user `{}` exist, the ingress user outside the group",
            host.service_user, host.service_group, host.ingress_user
        ),
        failures,
    );
    Identities {
        service,
        group,
        ingress,
    }
}

fn release(host: &Host, identities: &Identities, report: &mut Report) {
    let subject = format!("release {} is owned by the service user", host.release.display());
    let failures = match (std::fs::metadata(&host.release), &identities.service) {
        (Err(error), _) => vec![format!("cannot stat it: {error}")],
        (Ok(_), None) => vec!["the service user does not exist".into()],
        (Ok(meta), Some(user)) if meta.uid() != user.uid.as_raw() => vec![format!(
            "owned by uid {}, not `{}` (uid {}); stop and add a reviewed credential handoff rather than loosening credential modes",
            meta.uid(),
            user.name,
            user.uid
        )],
        (Ok(_), Some(_)) => Vec::new(),
    };
    report.check(subject, failures);
}

/// Each installed role's parsed environment.
type Environments = BTreeMap<&'static str, BTreeMap<String, String>>;

fn environments(host: &Host, identities: &Identities, report: &mut Report) -> Environments {
    let mut environments = Environments::new();
    for role in ROLES {
        let path = host.config_dir.join(format!("{role}.env"));
        let call = CALL_ROLES.contains(&role);
        let meta = match std::fs::symlink_metadata(&path) {
            Ok(meta) => meta,
            // An uninstalled role has no file; the api and maintenance are always installed.
            Err(error) if error.kind() == ErrorKind::NotFound && !ALWAYS_INSTALLED.contains(&role) => continue,
            Err(error) if error.kind() == ErrorKind::PermissionDenied && call => {
                report.check(
                    format!("environment file {}", path.display()),
                    vec![CALL_ENV_UNREADABLE.into()],
                );
                continue;
            }
            Err(error) => {
                report.check(
                    format!("environment file {}", path.display()),
                    vec![format!("cannot stat it: {error}")],
                );
                continue;
            }
        };
        let mut failures = Vec::new();
        if meta.file_type().is_symlink() {
            failures.push("is a symbolic link".to_owned());
        } else if !meta.is_file() {
            failures.push("is not a regular file".to_owned());
        }
        if meta.uid() != 0 {
            failures.push(format!("owned by uid {}, expected root", meta.uid()));
        }
        match &identities.group {
            Some(group) if meta.gid() != group.gid.as_raw() => {
                failures.push(format!("group gid {}, expected `{}`", meta.gid(), group.name));
            }
            _ => {}
        }
        let mode = meta.permissions().mode() & 0o7777;
        if mode != 0o640 {
            failures.push(format!("mode {mode:04o}, expected 0640"));
        }
        report.check(
            format!(
                "environment file {} is root:{} 0640",
                path.display(),
                group_name(identities)
            ),
            failures,
        );
        match std::fs::read(&path) {
            Ok(bytes) => match parse_env_file(&String::from_utf8_lossy(&bytes)) {
                Ok(variables) => {
                    environments.insert(role, variables);
                }
                Err(error) => report.check(format!("environment file {} parses", path.display()), vec![error]),
            },
            Err(error) if error.kind() == ErrorKind::PermissionDenied => report.check(
                format!("environment file {} is readable by the deploy user", path.display()),
                vec![if call {
                    CALL_ENV_UNREADABLE.to_owned()
                } else {
                    "environment file is not readable by the deploy user".to_owned()
                }],
            ),
            Err(error) => report.check(
                format!("environment file {} is readable by the deploy user", path.display()),
                vec![error.to_string()],
            ),
        }
    }
    environments
}

fn group_name(identities: &Identities) -> String {
    identities
        .group
        .as_ref()
        .map_or_else(|| "<service group>".to_owned(), |group| group.name.clone())
}

fn value<'a>(environment: &'a BTreeMap<String, String>, name: &str) -> &'a str {
    environment.get(name).map_or("", |value| value.trim())
}

fn flag_on(environment: &BTreeMap<String, String>, name: &str) -> bool {
    value(environment, name) == "1"
}

fn environment_rules(environments: &Environments, report: &mut Report) {
    // What each role must never hold.
    for (role, environment) in environments {
        let kind = match *role {
            "call-worker" => RoleKind::CallWorker,
            "call-ingress" => RoleKind::CallIngress,
            _ => RoleKind::Application,
        };
        let subject = if kind == RoleKind::Application {
            format!("{role} environment holds no inline call-provider key")
        } else {
            format!(
                "calling role environment {role} holds no model key, bearer, scopes, browser credential or forbidden key"
            )
        };
        let failures = refused(
            kind,
            environment.iter().map(|(name, value)| (name.as_str(), value.as_str())),
        )
        .map(|(name, reason)| vec![format!("{name} is set: {reason}")])
        .unwrap_or_default();
        report.check(subject, failures);
    }

    // Notification flags: both or neither in each file, equal within it and across files.
    let mut failures = Vec::new();
    let mut seen: Vec<(&str, &str)> = Vec::new();
    for (role, environment) in environments {
        let carried: Vec<&str> = NOTIFICATION_FLAGS
            .iter()
            .filter(|flag| environment.contains_key(**flag))
            .copied()
            .collect();
        if carried.is_empty() {
            continue;
        }
        if carried.len() == 1 {
            failures.push(format!("{role} carries {} without its twin", carried[0]));
            continue;
        }
        let (api, dispatch) = (
            value(environment, NOTIFICATION_FLAGS[0]),
            value(environment, NOTIFICATION_FLAGS[1]),
        );
        if (api == "1") != (dispatch == "1") {
            failures.push(format!("{role} has API={api:?} but dispatch={dispatch:?}"));
        }
        seen.push((role, api));
    }
    if let Some((first_role, first)) = seen.first()
        && let Some((role, other)) = seen.iter().find(|(_, value)| (*value == "1") != (*first == "1"))
    {
        failures.push(format!("{first_role} has {first:?} but {role} has {other:?}"));
    }
    report.check("notification flags are equal in every environment file", failures);

    // Delivery needs a provider, and the api offers Web Push exactly when notify delivers it.
    if let Some(notify) = environments.get("notify")
        && flag_on(notify, NOTIFICATION_FLAGS[1])
    {
        let mut failures = Vec::new();
        let web_push = !value(notify, "WEB_PUSH_SUBJECT").is_empty();
        if value(notify, "APNS_TOPIC").is_empty() && !web_push {
            failures.push("notify delivers through neither APNs (APNS_TOPIC) nor Web Push (WEB_PUSH_SUBJECT)".into());
        }
        if let Some(api) = environments.get("api") {
            match (web_push, value(api, "WEB_PUSH_PUBLIC_KEY").is_empty()) {
                (true, true) => failures.push(
                    "notify delivers Web Push but api has no WEB_PUSH_PUBLIC_KEY: no browser can subscribe".into(),
                ),
                (false, false) => failures.push(
                    "api offers WEB_PUSH_PUBLIC_KEY but notify has no WEB_PUSH_SUBJECT: subscriptions would get nothing"
                        .into(),
                ),
                _ => {}
            }
        }
        report.check(
            "notify has a push provider, and Web Push is on in both api and notify or neither",
            failures,
        );
    }

    // Calling notifications: the api and both call roles agree, and then enqueue through the
    // notification flags.
    let mut failures = Vec::new();
    let call_files: Vec<(&str, &BTreeMap<String, String>)> = ["api", "call-worker", "call-ingress"]
        .into_iter()
        .filter_map(|role| environments.get(role).map(|environment| (role, environment)))
        .collect();
    let on: Vec<&str> = call_files
        .iter()
        .filter(|(_, environment)| flag_on(environment, "AGENT_CALL_NOTIFICATIONS_ENABLED"))
        .map(|(role, _)| *role)
        .collect();
    if !on.is_empty() {
        for (role, environment) in &call_files {
            if !on.contains(role) {
                failures.push(format!(
                    "AGENT_CALL_NOTIFICATIONS_ENABLED is 1 in {on:?} but not in {role}"
                ));
            }
            if !NOTIFICATION_FLAGS.iter().all(|flag| flag_on(environment, flag)) {
                failures.push(format!(
                    "{role} needs both notification flags at 1 for call notifications"
                ));
            }
        }
    }
    report.check(
        "call notification flags agree across the api and call role environments",
        failures,
    );

    // Mail: one atomic configuration in every application environment.
    let mut failures = Vec::new();
    let mut application_mail: Option<(&str, MailEnvironment)> = None;
    for role in APPLICATION_MAIL_ROLES {
        let Some(environment) = environments.get(role) else {
            continue;
        };
        match MailEnvironment::parse(|name| environment.get(name).cloned()) {
            Err(error) => failures.push(format!("{role}: {error}")),
            Ok(mail) => match &application_mail {
                None => application_mail = Some((role, mail)),
                Some((first, first_mail)) if *first_mail != mail => {
                    failures.push(format!("{role}'s mail configuration differs from {first}'s"));
                }
                Some(_) => {}
            },
        }
    }
    report.check(
        "mail configuration is complete or absent, and the same in every application environment",
        failures,
    );

    // Unsubscribe assistance: the same value for the three roles that share it, and never the
    // offline demo's local endpoint on a deployed host.
    let mut failures = Vec::new();
    let unsubscribe: Vec<(&str, bool)> = ["api", "worker", "async-worker"]
        .into_iter()
        .filter_map(|role| {
            environments
                .get(role)
                .map(|environment| (role, flag_on(environment, "AGENT_EMAIL_UNSUBSCRIBE_ENABLED")))
        })
        .collect();
    if let Some((first, on)) = unsubscribe.first()
        && let Some((role, _)) = unsubscribe.iter().find(|(_, other)| other != on)
    {
        failures.push(format!(
            "AGENT_EMAIL_UNSUBSCRIBE_ENABLED differs between {first} and {role}"
        ));
    }
    for (role, environment) in environments {
        for name in ["EMAIL_UNSUBSCRIBE_LOCAL_ENDPOINT", "EMAIL_UNSUBSCRIBE_LOCAL_CA_FILE"] {
            if environment.contains_key(name) {
                failures.push(format!("{role} sets {name}, which is for the offline demo only"));
            }
        }
    }
    report.check(
        "unsubscribe assistance is set alike, without the demo's local endpoint",
        failures,
    );

    // The scheduler gets the flag and the manifest path only.
    if let Some(schedule) = environments.get("schedule") {
        let mut failures = Vec::new();
        for name in schedule.keys() {
            let credential_like = name.starts_with("MAIL_")
                || name.ends_with("_CREDENTIAL_FILE")
                || name.ends_with("_KEY_FILE")
                || name.contains("SECRET")
                || name.ends_with("_API_KEY")
                || name == "API_TOKEN_FILE";
            if credential_like && name != "MAIL_ACCOUNTS_FILE" {
                failures.push(format!("{name} does not belong in the scheduler environment"));
            }
        }
        if let Some((role, mail)) = &application_mail {
            if flag_on(schedule, "AGENT_EMAIL_ENABLED") != mail.enabled() {
                failures.push(format!("AGENT_EMAIL_ENABLED differs from {role}'s"));
            }
            let manifest = match mail {
                MailEnvironment::Manifest(path) => path.as_str(),
                MailEnvironment::Off | MailEnvironment::Legacy(_) => "",
            };
            if value(schedule, "MAIL_ACCOUNTS_FILE") != manifest {
                failures.push(format!(
                    "MAIL_ACCOUNTS_FILE differs from {role}'s (the legacy form leaves it empty)"
                ));
            }
        }
        report.check(
            "scheduler environment carries only AGENT_EMAIL_ENABLED and MAIL_ACCOUNTS_FILE of mail, never a credential path",
            failures,
        );
    }
}

/// A credential a unit loads, and when it is required.
struct Credential {
    role: &'static str,
    name: &'static str,
    ingress_owned: bool,
    required: fn(&BTreeMap<String, String>) -> bool,
}

/// The async worker's credential holding the owner's junk evidence packet (`filter`, `pilot`).
pub const JUNK_EVIDENCE: &str = "junk-evidence";

fn junk_mode(environment: &BTreeMap<String, String>) -> &str {
    match value(environment, "AGENT_EMAIL_JUNK_FILTER_MODE") {
        "" => "off",
        mode => mode,
    }
}

const CREDENTIALS: [Credential; 7] = [
    Credential {
        role: "api",
        name: "api-token",
        ingress_owned: false,
        required: |_| true,
    },
    Credential {
        role: "worker",
        name: "model-api-key",
        ingress_owned: false,
        required: |environment| !value(environment, "OPENAI_BASE_URL").is_empty(),
    },
    Credential {
        role: "notify",
        name: "apns-key",
        ingress_owned: false,
        required: |environment| {
            flag_on(environment, "AGENT_NOTIFICATION_DISPATCH_ENABLED") && !value(environment, "APNS_TOPIC").is_empty()
        },
    },
    Credential {
        role: "notify",
        name: "vapid-key",
        ingress_owned: false,
        required: |environment| {
            flag_on(environment, "AGENT_NOTIFICATION_DISPATCH_ENABLED")
                && !value(environment, "WEB_PUSH_SUBJECT").is_empty()
        },
    },
    Credential {
        role: "call-worker",
        name: "callprov-api-key",
        ingress_owned: false,
        required: |environment| flag_on(environment, "AGENT_CALL_ENABLED"),
    },
    Credential {
        role: "async-worker",
        name: JUNK_EVIDENCE,
        ingress_owned: false,
        required: |environment| matches!(junk_mode(environment), "filter" | "pilot"),
    },
    Credential {
        role: "call-ingress",
        name: "callprov-webhook-secret",
        ingress_owned: true,
        required: |environment| flag_on(environment, "AGENT_CALL_INGRESS_ENABLED"),
    },
];

fn credentials(host: &Host, identities: &Identities, environments: &Environments, report: &mut Report) {
    for credential in &CREDENTIALS {
        let Some(environment) = environments.get(credential.role) else {
            continue;
        };
        if !(credential.required)(environment) {
            continue;
        }
        let call = CALL_ROLES.contains(&credential.role) || credential.name.starts_with("callprov");
        let directory = host.credentials_dir.join(credential.role);
        // The directories above the credential: traversable (0711), never listable.
        let mut failures = Vec::new();
        for dir in [&host.credentials_dir, &directory] {
            match std::fs::symlink_metadata(dir) {
                Ok(meta) if !meta.is_dir() => failures.push(format!("{} is not a directory", dir.display())),
                Ok(meta) => {
                    let mode = meta.permissions().mode() & 0o7777;
                    if mode != 0o711 {
                        failures.push(format!("{} has mode {mode:04o}, expected 0711", dir.display()));
                    }
                }
                Err(error) if error.kind() == ErrorKind::PermissionDenied => {}
                Err(error) => failures.push(format!("{}: {error}", dir.display())),
            }
            if access(dir.as_path(), AccessFlags::X_OK).is_err() {
                failures.push(if call {
                    CALL_CREDENTIAL_DIR_UNTRAVERSABLE.to_owned()
                } else {
                    format!("{} is not traversable by the deploy user", dir.display())
                });
                break;
            }
        }
        report.check(
            format!("credential directory {} is 0711 and traversable", directory.display()),
            failures,
        );

        let owner = if credential.ingress_owned {
            identities.ingress.as_ref()
        } else {
            identities.service.as_ref()
        };
        let path = directory.join(credential.name);
        report.check(
            format!("credential {} is an owner-only regular file", path.display()),
            inspect_secret(&path, owner.map(|user| (user.uid, user.name.as_str()))),
        );
    }
}

/// Checks a secret by `lstat` and its ACL attribute, without opening it.
fn inspect_secret(path: &Path, owner: Option<(Uid, &str)>) -> Vec<String> {
    let meta = match std::fs::symlink_metadata(path) {
        Ok(meta) => meta,
        Err(error) if error.kind() == ErrorKind::NotFound => return vec!["missing".into()],
        Err(error) => return vec![format!("cannot stat it: {error}")],
    };
    let mut failures = Vec::new();
    if meta.file_type().is_symlink() {
        return vec!["is a symbolic link".into()];
    }
    if !meta.is_file() {
        return vec!["is not a regular file".into()];
    }
    let mode = meta.permissions().mode() & 0o7777;
    if mode != 0o600 {
        failures.push(format!("mode {mode:04o}, expected 0600"));
    }
    match owner {
        Some((uid, name)) if meta.uid() != uid.as_raw() => {
            failures.push(format!("owned by uid {}, expected `{name}`", meta.uid()));
        }
        Some(_) => {}
        None => failures.push("its owner does not exist".into()),
    }
    match hardening::acl::extended_entries(path) {
        Ok(entries) if entries.is_empty() => {}
        Ok(entries) => failures.push(format!(
            "extended ACL entries ({}); only owner, group and other are allowed",
            entries.iter().map(ToString::to_string).collect::<Vec<_>>().join(", ")
        )),
        Err(error) => failures.push(format!("cannot read its ACL: {error}")),
    }
    failures
}

fn mail_credentials(identities: &Identities, environments: &Environments, report: &mut Report) {
    let Some(environment) = APPLICATION_MAIL_ROLES
        .iter()
        .find_map(|role| environments.get(role))
        .filter(|environment| flag_on(environment, "AGENT_EMAIL_ENABLED"))
    else {
        return;
    };
    let service = identities.service.as_ref().map(|user| (user.uid, user.name.as_str()));
    let mut accounts: Vec<(String, [String; 3])> = Vec::new();
    let manifest = match MailEnvironment::parse(|name| environment.get(name).cloned()) {
        Ok(MailEnvironment::Legacy(paths)) => {
            accounts.push(("default".into(), paths));
            None
        }
        Ok(MailEnvironment::Manifest(path)) => Some(path),
        // Already reported by the environment rules.
        Ok(MailEnvironment::Off) | Err(_) => None,
    };
    if let Some(manifest) = manifest.as_deref() {
        let path = Path::new(manifest);
        let mut failures = Vec::new();
        match std::fs::symlink_metadata(path) {
            Ok(meta) if !meta.is_file() => failures.push("is not a regular file".to_owned()),
            Ok(meta) => {
                if meta.permissions().mode() & 0o022 != 0 {
                    failures.push("is group- or world-writable".to_owned());
                }
                if service.is_some_and(|(uid, _)| meta.uid() != uid.as_raw()) {
                    failures.push("is not owned by the service user".to_owned());
                }
                match std::fs::read(path)
                    .map_err(|error| error.to_string())
                    .and_then(|bytes| domain::manifest::Manifest::parse(&bytes).map_err(|error| error.to_string()))
                {
                    Ok(manifest) => accounts.extend(
                        manifest
                            .accounts
                            .into_iter()
                            .map(|account| (account.account_id, [account.read, account.write, account.send])),
                    ),
                    Err(error) => failures.push(error),
                }
            }
            Err(error) => failures.push(format!("cannot stat it: {error}")),
        }
        report.check(format!("mail accounts manifest {manifest}"), failures);
    }
    let mut directories: BTreeMap<PathBuf, String> = BTreeMap::new();
    for (account, paths) in accounts {
        let mut failures = Vec::new();
        let parents: Vec<PathBuf> = paths
            .iter()
            .map(|path| Path::new(path).parent().map(Path::to_path_buf).unwrap_or_default())
            .collect();
        if parents.iter().any(|parent| *parent != parents[0]) {
            failures.push("its three documents are not in one directory".to_owned());
        }
        let directory = &parents[0];
        if let Some(other) = directories.insert(directory.clone(), account.clone()) {
            failures.push(format!("shares its directory with account `{other}`"));
        }
        match std::fs::symlink_metadata(directory) {
            Ok(meta) => {
                if !meta.is_dir() || meta.permissions().mode() & 0o7777 != 0o700 {
                    failures.push(format!("{} must be a 0700 directory", directory.display()));
                }
                if service.is_some_and(|(uid, _)| meta.uid() != uid.as_raw()) {
                    failures.push(format!("{} is not owned by the service user", directory.display()));
                }
            }
            Err(error) => failures.push(format!("{}: {error}", directory.display())),
        }
        if access(directory.as_path(), AccessFlags::X_OK).is_err() {
            failures.push(format!(
                "{} is not traversable; run preflight as the service user that owns the mail credentials",
                directory.display()
            ));
        } else {
            for path in &paths {
                for failure in inspect_secret(Path::new(path), service) {
                    failures.push(format!("{path}: {failure}"));
                }
            }
        }
        report.check(
            format!("mail credentials of account `{account}` are owner-only documents"),
            failures,
        );
    }
}

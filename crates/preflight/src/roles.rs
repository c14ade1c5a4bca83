//! Each installed role as a whole: its environment names its own database login, and its unit is
//! installed; and the public site's configuration in the api's environment.

use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::Path;

use domain::site::PublicUrl;

use crate::{Environments, Host, Report, flag_on, value};

/// Each role's database login, as `policies/logins.sql` makes them (`store::policies` holds the
/// same table; a test compares the two).
pub const LOGINS: [(&str, &str); 8] = [
    ("api", "steward_api"),
    ("worker", "steward_worker"),
    ("async-worker", "steward_async_worker"),
    ("schedule", "steward_schedule"),
    ("notify", "steward_notify"),
    ("maintenance", "steward_maintenance"),
    ("call-worker", "steward_call"),
    ("call-ingress", "steward_ingress"),
];

/// The site's template files (`site/`), which `SITE_TEMPLATES_DIR` may replace.
const TEMPLATES: [&str; 4] = ["home.html", "privacy.html", "tos.html", "site.css"];

/// The user of a `postgres://user@host/db` URL (`None` when it names none).
fn login_of(url: &str) -> Option<&str> {
    let rest = url
        .strip_prefix("postgres://")
        .or_else(|| url.strip_prefix("postgresql://"))?;
    let authority = rest.split(['/', '?']).next()?;
    let (userinfo, _) = authority.rsplit_once('@')?;
    let user = userinfo.split(':').next()?;
    (!user.is_empty()).then_some(user)
}

/// One line per installed role: its login and its unit.
pub(crate) fn installed(host: &Host, environments: &Environments, report: &mut Report) {
    for (role, login) in LOGINS {
        let Some(environment) = environments.get(role) else {
            continue;
        };
        let mut failures = Vec::new();
        match login_of(value(environment, "DATABASE_URL")) {
            Some(named) if named == login => {}
            Some(named) => failures.push(format!(
                "DATABASE_URL logs in as `{named}`, not the role's own `{login}`"
            )),
            None => failures.push(format!("DATABASE_URL names no login; it must be `{login}`")),
        }
        let unit = host.units_dir.join(format!("steward-{role}.service"));
        if !unit.is_file() {
            failures.push(format!("its unit {} is not installed", unit.display()));
        }
        report.check(
            format!("role {role}: logs in as `{login}`, unit steward-{role}.service installed"),
            failures,
        );
    }
}

/// The public site of the api's environment: addresses that can be served and published, and
/// templates only root can change.
pub(crate) fn site(environments: &Environments, report: &mut Report) {
    let Some(api) = environments.get("api") else {
        return;
    };
    let mut failures = Vec::new();
    let mut addresses = Vec::new();
    for variable in ["SITE_URL", "DOCS_URL"] {
        let text = value(api, variable);
        if text.is_empty() {
            continue;
        }
        match PublicUrl::parse(text) {
            Ok(url) if !url.as_str().starts_with("https://") => {
                failures.push(format!("{variable} must be https:// to be published"));
            }
            Ok(url) => addresses.push(url),
            Err(reason) => failures.push(format!("{variable} {reason}")),
        }
    }
    // Mail on: the provider's app verification reads the home page and the privacy policy.
    if flag_on(api, "AGENT_EMAIL_ENABLED") && value(api, "SITE_URL").is_empty() {
        failures.push(
            "SITE_URL is unset while mail is on: the mail provider's app verification needs the public home page and privacy policy"
                .into(),
        );
    }
    let templates = value(api, "SITE_TEMPLATES_DIR");
    if !templates.is_empty() {
        failures.extend(template_failures(Path::new(templates)));
    }
    let subject = match addresses.first() {
        Some(site) => format!("public site at {site}: addresses and templates"),
        None => "public site: addresses and templates".to_owned(),
    };
    report.check(subject, failures);
}

/// What is wrong with a templates directory: it must be a directory root owns and only root
/// can change, whose template files are regular files the api can read.
fn template_failures(directory: &Path) -> Vec<String> {
    let shown = directory.display();
    if !directory.is_absolute() {
        return vec![format!("SITE_TEMPLATES_DIR `{shown}` is not an absolute path")];
    }
    let meta = match std::fs::symlink_metadata(directory) {
        Ok(meta) => meta,
        Err(error) => return vec![format!("SITE_TEMPLATES_DIR {shown}: {error}")],
    };
    if !meta.is_dir() {
        return vec![format!("SITE_TEMPLATES_DIR {shown} is not a directory")];
    }
    let mut failures = Vec::new();
    let writable_by_others = |mode: u32| mode & 0o022 != 0;
    if meta.uid() != 0 || writable_by_others(meta.permissions().mode()) {
        failures.push(format!(
            "SITE_TEMPLATES_DIR {shown} must be root's and writable by root only"
        ));
    }
    for file in TEMPLATES {
        let path = directory.join(file);
        let Ok(meta) = std::fs::symlink_metadata(&path) else {
            continue;
        };
        let mode = meta.permissions().mode();
        if !meta.is_file() {
            failures.push(format!("{} is not a regular file", path.display()));
        } else if meta.uid() != 0 || writable_by_others(mode) {
            failures.push(format!("{} must be root's and writable by root only", path.display()));
        } else if mode & 0o044 == 0 {
            failures.push(format!("{} is not readable by the service group", path.display()));
        }
    }
    failures
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_login_is_the_user_of_the_url() {
        assert_eq!(
            login_of("postgres://steward_maintenance@localhost/steward?host=/run/postgresql"),
            Some("steward_maintenance")
        );
        assert_eq!(
            login_of("postgresql://steward_api:pw@db:5432/steward"),
            Some("steward_api")
        );
        assert_eq!(login_of("postgres://localhost/steward?user=steward_api"), None);
        assert_eq!(login_of("mysql://steward_api@db/steward"), None);
        assert_eq!(login_of(""), None);
    }
}

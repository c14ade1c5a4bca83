//! The contract test: schemathesis, with every check, against the dev stack's OpenAPI document,
//! with a token holding every scope, the notification routes and Email mode (on the demo
//! mailbox of `steward-demo-mail`) mounted. It passes only with no failure and no error.
//!
//! schemathesis (pinned) is installed from PyPI into a virtual environment under
//! `target/xtask/schemathesis` (kept between runs, rebuilt when the pin changes). The stack runs
//! on a fresh database of the caller's cluster, on a free loopback port.

use std::fs;
use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

/// The schemathesis release the contract is checked with.
const SCHEMATHESIS: &str = "schemathesis==4.32.5";
/// Examples per operation and phase: enough to find what the schema and the server disagree
/// on, small enough to keep the whole suite well under CI's limit.
const MAX_EXAMPLES: &str = "20";
/// The generation seed: fixed, so a run is repeatable and CI sees the same cases each time;
/// `STEWARD_CONTRACT_SEED=random` (or another number) explores further.
const SEED: &str = "169756553792694912130547068163840334508";
/// The notification flags (the API's flag-gated routes that are built; Email mode and
/// unsubscribe assistance come with the demo mailbox), so their operations are checked too.
pub(crate) const FLAGS: &[(&str, &str)] = &[
    ("AGENT_NOTIFICATION_API_ENABLED", "1"),
    ("AGENT_NOTIFICATION_DISPATCH_ENABLED", "1"),
    ("AGENT_MEMORY_API_ENABLED", "1"),
];
/// Every scope, as the bar says: no operation is answered 403 for want of one.
pub(crate) const ALL_SCOPES: &str = "sessions.read,sessions.write,schedules.read,schedules.write,settings.read,settings.write,notifications.read,notifications.write,memory.read,memory.write,email.read,email.write,call.read,call.cancel,call.delete,people.read,people.write";

/// Runs the contract test against a stack on `admin_url`'s server (a database of its own).
pub fn run(admin_url: &str) -> anyhow::Result<()> {
    let schemathesis = ensure_schemathesis()?;
    let bin = crate::dev::build_roles()?;
    let work = private_dir("contract")?;
    let token_file = work.join("api-token");
    crate::dev::ensure_token(&token_file)?;
    let listen = free_port()?;
    let database = with_database(admin_url, "steward_contract");
    // Only warnings from the roles: thousands of request lines would bury schemathesis's report.
    let mut demo = crate::demo_mail::DemoMail::start(&bin, &work.join("demo-mail"))?;
    let mut environment = demo.environment();
    environment.extend(crate::demo_calls::environment(&work.join("calls"))?);
    environment.extend(crate::dev::web_push_environment(&bin, &work.join("vapid-key"))?);
    let mut flags: Vec<(&str, &str)> = FLAGS.to_vec();
    flags.extend(environment.iter().map(|(name, value)| (name.as_str(), value.as_str())));
    let mut stack = match crate::dev::Stack::start(&bin, &database, &token_file, listen, ALL_SCOPES, "warn", &flags) {
        Ok(stack) => stack,
        Err(error) => {
            demo.stop();
            return Err(error);
        }
    };
    let token = fs::read_to_string(&token_file).context("read the token")?;
    let seed = std::env::var("STEWARD_CONTRACT_SEED").unwrap_or_else(|_| SEED.to_owned());
    let seed: Vec<String> = if seed == "random" {
        Vec::new()
    } else {
        vec!["--seed".to_owned(), seed]
    };
    let config = crate::workspace_root().join("tests/schemathesis.toml");
    println!("contract: schemathesis against http://{listen}/v1/openapi.json");
    let status = Command::new(&schemathesis)
        .arg("--config-file")
        .arg(&config)
        .args(["run", &format!("http://{listen}/v1/openapi.json")])
        .args(["--checks", "all", "--max-examples", MAX_EXAMPLES, "--no-color"])
        .args(["--request-timeout", "10", "--workers", "1"])
        .args(&seed)
        .arg("--header")
        .arg(format!("Authorization: Bearer {}", token.trim()))
        .current_dir(&work)
        .status()
        .context("run schemathesis");
    let alive = stack.check().and_then(|()| demo.check());
    stack.stop();
    demo.stop();
    let _ = fs::remove_dir_all(&work);
    alive.context("a role died during the contract test")?;
    if !status?.success() {
        bail!("the contract test failed: the API and its OpenAPI document disagree (see above)");
    }
    Ok(())
}

/// The `schemathesis` command of the pinned release, installing it when missing.
fn ensure_schemathesis() -> anyhow::Result<PathBuf> {
    let venv = crate::workspace_root().join("target/xtask/schemathesis");
    let command = venv.join("bin/schemathesis");
    let pin = venv.join("pinned");
    if command.is_file() && fs::read_to_string(&pin).is_ok_and(|pinned| pinned == SCHEMATHESIS) {
        return Ok(command);
    }
    let _ = fs::remove_dir_all(&venv);
    fs::create_dir_all(venv.parent().unwrap_or(&venv)).context("create target/xtask")?;
    println!("contract: installing {SCHEMATHESIS} into {}", venv.display());
    let created = Command::new("python3")
        .args(["-m", "venv"])
        .arg(&venv)
        .status()
        .context("run python3 -m venv (is python3 installed?)")?;
    if !created.success() {
        bail!("python3 -m venv failed (Debian: apt-get install python3-venv)");
    }
    let installed = Command::new(venv.join("bin/pip"))
        .args(["install", "--quiet", "--disable-pip-version-check", SCHEMATHESIS])
        .status()
        .context("run pip")?;
    if !installed.success() {
        bail!("pip could not install {SCHEMATHESIS} from PyPI");
    }
    fs::write(&pin, SCHEMATHESIS).context("record the pinned release")?;
    Ok(command)
}

/// `url` naming `database` instead of its own.
pub(crate) fn with_database(url: &str, database: &str) -> String {
    let (base, query) = url
        .split_once('?')
        .map_or((url, None), |(base, query)| (base, Some(query)));
    let base = base.rsplit_once('/').map_or(base, |(server, _)| server);
    match query {
        Some(query) => format!("{base}/{database}?{query}"),
        None => format!("{base}/{database}"),
    }
}

pub(crate) fn free_port() -> anyhow::Result<SocketAddr> {
    let listener = TcpListener::bind("127.0.0.1:0").context("find a free port")?;
    listener.local_addr().context("find a free port")
}

/// A fresh private working directory `steward-<name>-<pid>` (schemathesis writes its cache
/// into the current one).
pub(crate) fn private_dir(name: &str) -> anyhow::Result<PathBuf> {
    let dir = std::env::temp_dir().join(format!("steward-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir(&dir).with_context(|| format!("create {}", dir.display()))?;
    set_private(&dir)?;
    Ok(dir)
}

fn set_private(dir: &Path) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(dir, fs::Permissions::from_mode(0o700)).context("make the work directory private")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_database_is_swapped_and_the_socket_kept() {
        assert_eq!(
            with_database("postgres://postgres@localhost:5432/postgres?host=/tmp/s", "c"),
            "postgres://postgres@localhost:5432/c?host=/tmp/s"
        );
        assert_eq!(with_database("postgres://u@h/db", "c"), "postgres://u@h/c");
    }
}

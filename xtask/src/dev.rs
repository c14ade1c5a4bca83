//! `cargo xtask dev`: the whole service (api, worker, schedule, maintenance and notify roles) on
//! this machine with nothing set up by hand; notifications go to the web client by Web Push,
//! signed with a VAPID key made once (`var/vapid-key`). `--demo-mail` adds Email mode: the mail provider stand-in with a demo mailbox
//! (`steward-demo-mail`), its account connected, and the async worker keeping its projection.
//! `--demo-calls` adds calling: the call provider stand-in (`steward-demo-calls`), the
//! call-ingress listener and the call worker, with `call_finished` notifications.
//! `--demo-browser` adds the hosted browser: the browser role on its own Xvfb, sending its
//! browsers to a local tea shop (`steward-demo-shop`, `https://shop.example`, sign in as `ada` /
//! `tea`), with Website Access and `browser.act` on.
//!
//! State lives under the git-ignored `var/`: the PostgreSQL cluster (`var/pg`), the API token
//! (`var/api-token`, owner-only), the demo account (`var/demo-mail`) and the demo call provider
//! (`var/demo-calls`), the demo shop and the browser role's secrets (`var/demo-browser`), all
//! made afresh each start, and
//! `var/dev.json` describing the running stack for tools.

use std::fs;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::process::{Child, Command, ExitCode};

use anyhow::{Context, bail};
use nix::sys::signal::{SigSet, Signal};
use pgcluster::Cluster;

const DEFAULT_PORT: u16 = 8080;
/// The API's environment template: its `AUTH_SCOPES` (every scope a built route needs, checked by
/// the API's tests) is what the dev stack grants unless `AUTH_SCOPES` is set in your environment.
const API_TEMPLATE: &str = "systemd/env/api.env";

/// The scopes the API template grants.
pub(crate) fn template_scopes() -> anyhow::Result<String> {
    let path = crate::workspace_root().join(API_TEMPLATE);
    let text = std::fs::read_to_string(&path).with_context(|| format!("read {}", path.display()))?;
    text.lines()
        .find_map(|line| line.strip_prefix("AUTH_SCOPES="))
        .map(str::to_owned)
        .with_context(|| format!("{} has no AUTH_SCOPES line", path.display()))
}

struct Options {
    port: u16,
    demo_mail: bool,
    demo_calls: bool,
    demo_browser: bool,
}

fn parse(args: Vec<String>) -> anyhow::Result<Options> {
    let mut options = Options {
        port: DEFAULT_PORT,
        demo_mail: false,
        demo_calls: false,
        demo_browser: false,
    };
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--port" => {
                let value = args.next().context("--port needs a value")?;
                options.port = value
                    .parse()
                    .with_context(|| format!("--port `{value}` is not a port number"))?;
            }
            "--demo-mail" => options.demo_mail = true,
            "--demo-calls" => options.demo_calls = true,
            "--demo-browser" => options.demo_browser = true,
            other => {
                bail!(
                    "unknown argument `{other}` (usage: cargo xtask dev [--port N] [--demo-mail] [--demo-calls] [--demo-browser])"
                )
            }
        }
    }
    Ok(options)
}

pub fn run(args: Vec<String>) -> anyhow::Result<ExitCode> {
    let options = parse(args)?;
    let root = crate::workspace_root();
    let var = root.join("var");
    fs::create_dir_all(&var).context("create var/")?;
    let bin = build_roles()?;

    // DATABASE_URL points the stack at a server of your own instead of the private cluster.
    let (mut cluster, database_url) = match std::env::var("DATABASE_URL").ok().filter(|url| !url.is_empty()) {
        Some(url) => (None, url),
        None => {
            let binaries = crate::postgres::ensure_binaries()?;
            let cluster = Cluster::persistent(&binaries, &var.join("pg"))
                .context("start the dev PostgreSQL cluster (is another `cargo xtask dev` running?)")?;
            let url = cluster.url("steward");
            (Some(cluster), url)
        }
    };
    let token_file = var.join("api-token");
    ensure_token(&token_file)?;
    let listen: SocketAddr = ([127, 0, 0, 1], options.port).into();
    let base_url = format!("http://{listen}");
    let scopes = match std::env::var("AUTH_SCOPES") {
        Ok(scopes) => scopes,
        Err(_) => template_scopes()?,
    };

    // The roles start before signals are blocked: a child inherits the mask, and a role that
    // cannot receive SIGTERM never stops.
    let log_level = std::env::var("LOG_LEVEL").unwrap_or_else(|_| "info".to_owned());
    let mut demo = None;
    let mut calls = None;
    let mut browser = None;
    let started = (|| {
        if options.demo_mail {
            demo = Some(crate::demo_mail::DemoMail::start(&bin, &var.join("demo-mail"))?);
        }
        if options.demo_calls {
            calls = Some(crate::demo_calls::DemoCalls::start(&bin, &var.join("demo-calls"))?);
        }
        let mut environment = demo
            .as_ref()
            .map(crate::demo_mail::DemoMail::environment)
            .unwrap_or_default();
        if let Some(calls) = calls.as_ref() {
            environment.extend(calls.environment());
        }
        if options.demo_browser {
            browser = Some(crate::demo_browser::DemoBrowser::start(
                &bin,
                &var.join("demo-browser"),
                &log_level,
            )?);
        }
        if let Some(browser) = browser.as_ref() {
            environment.extend(browser.environment());
        }
        // Memory and People: beliefs from conversations (and, with the demo mailbox, people and
        // mail-derived beliefs), formed by the offline former.
        environment.push(("AGENT_MEMORY_API_ENABLED".to_owned(), "1".to_owned()));
        // Notifications, delivered by Web Push to the web client installed from this stack.
        environment.extend(web_push_environment(&bin, &var.join("vapid-key"))?);
        let flags: Vec<(&str, &str)> = environment
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect();
        let mut stack = Stack::start(&bin, &database_url, &token_file, listen, &scopes, &log_level, &flags)?;
        if let Err(error) = stack.start_notify(&bin, &database_url, &log_level, &flags, &var.join("vapid-key")) {
            stack.stop();
            return Err(error);
        }
        if let Some(calls) = calls.as_ref()
            && let Err(error) = stack.start_calls(&bin, &database_url, &log_level, &flags, calls)
        {
            stack.stop();
            return Err(error);
        }
        Ok(stack)
    })();
    let mut stack = match started {
        Ok(stack) => stack,
        Err(error) => {
            if let Some(demo) = demo.as_mut() {
                demo.stop();
            }
            if let Some(calls) = calls.as_mut() {
                calls.stop();
            }
            if let Some(browser) = browser.as_mut() {
                browser.stop();
            }
            if let Some(cluster) = cluster.as_mut() {
                let _ = cluster.stop();
            }
            return Err(error);
        }
    };
    // From here on, Ctrl-C and SIGTERM are received by waiting for them, never by dying.
    let mut signals = SigSet::empty();
    for signal in [Signal::SIGINT, Signal::SIGTERM, Signal::SIGCHLD] {
        signals.add(signal);
    }
    signals.thread_block().context("block signals")?;
    let control_url = calls.as_ref().map(|calls| calls.control_url().to_owned());
    let orders_url = browser
        .as_ref()
        .and_then(|browser| browser.shop("DEMO_SHOP_ORDERS_URL"))
        .map(str::to_owned);
    let description = format!(
        "{{\n  \"base_url\": {},\n  \"token_file\": {},\n  \"database_url\": {}{}{}\n}}\n",
        json_string(&base_url),
        json_string(&token_file.display().to_string()),
        json_string(&database_url),
        control_url
            .as_ref()
            .map(|url| format!(",\n  \"demo_calls_url\": {}", json_string(url)))
            .unwrap_or_default(),
        orders_url
            .as_ref()
            .map(|url| format!(",\n  \"demo_shop_orders_url\": {}", json_string(url)))
            .unwrap_or_default(),
    );
    crate::stand_in::write_private(&var.join("dev.json"), &description).context("write var/dev.json")?;
    println!(
        "\nsteward is ready\n  base URL:   {base_url}\n  token file: {}\n  described in var/dev.json; Ctrl-C stops everything\n",
        token_file.display()
    );
    if demo.is_some() {
        println!("  Email mode: the demo account `demo` is connected to the local mail provider stand-in\n");
        // The seeded conversation, on a stack that holds none yet: Memory and People show what
        // it forms beside what the demo mailbox gathers.
        let token = fs::read_to_string(&token_file).context("read the token file")?;
        match crate::demo_seed::seed(listen, token.trim()) {
            Ok(true) => println!(
                "  Memory and People: a seeded conversation told the agent about the owner; its beliefs are in\n  \
                 Memory and its person (Grace Hopper) in People, beside the demo mailbox's correspondents\n"
            ),
            Ok(false) => {}
            // The stack runs either way: the demo is only missing its conversation.
            Err(error) => eprintln!("  the seeded conversation could not be sent: {error:#}\n"),
        }
    }
    if let Some(url) = control_url.as_ref() {
        println!(
            "  Calling: the number +15550100000 is served by the local call provider stand-in;\n  \
             ask the agent to call someone, or simulate a call in with\n    curl -X POST {url}/demo/inbound\n"
        );
    }
    if let Some(orders) = orders_url.as_ref() {
        println!(
            "  Hosted browser: Settings → Website Access → add https://shop.example with the sign-in page\n  \
             https://shop.example/signin and sign in as ada / tea; then start a conversation on it and ask\n  \
             the agent to order tea (orders placed: {orders})\n"
        );
    }

    let outcome = loop {
        match signals.wait().context("wait for signals")? {
            Signal::SIGCHLD => {
                if let Err(error) = stack.check() {
                    break Err(error);
                }
                if let Some(Err(error)) = demo.as_mut().map(crate::demo_mail::DemoMail::check) {
                    break Err(error);
                }
                if let Some(Err(error)) = calls.as_mut().map(crate::demo_calls::DemoCalls::check) {
                    break Err(error);
                }
                if let Some(Err(error)) = browser.as_mut().map(crate::demo_browser::DemoBrowser::check) {
                    break Err(error);
                }
            }
            _ => break Ok(()),
        }
    };
    eprintln!("xtask: stopping");
    stack.stop();
    if let Some(demo) = demo.as_mut() {
        demo.stop();
    }
    if let Some(calls) = calls.as_mut() {
        calls.stop();
    }
    if let Some(browser) = browser.as_mut() {
        browser.stop();
    }
    if let Some(cluster) = cluster.as_mut() {
        cluster.stop().context("stop PostgreSQL")?;
    }
    let _ = fs::remove_file(var.join("dev.json"));
    outcome.map(|()| ExitCode::SUCCESS)
}

/// Builds the role binaries the stack runs; returns their directory.
pub fn build_roles() -> anyhow::Result<std::path::PathBuf> {
    build_roles_and(&[])
}

/// [`build_roles`] and the packages `more`, in one build (so shared crates are built once, with
/// their features unified).
pub fn build_roles_and(more: &[&str]) -> anyhow::Result<std::path::PathBuf> {
    let status = crate::cargo()
        .args([
            "build",
            "--locked",
            "-p",
            "steward-api",
            "-p",
            "steward-worker",
            "-p",
            "steward-schedule",
            "-p",
            "steward-maintenance",
            "-p",
            "steward-migrate",
            "-p",
            "steward-async-worker",
            "-p",
            "steward-call-ingress",
            "-p",
            "steward-call-worker",
            "-p",
            "steward-browser",
            // Web Push delivery, and the VAPID key it signs with (`--generate-vapid-key`).
            "-p",
            "steward-notify",
            "-p",
            "steward-preflight",
            // steward-demo-mail, the mail provider stand-in of `--demo-mail` and the browser tests
            // (its local unsubscribe endpoint speaks TLS).
            "-p",
            "testkit",
            "--features",
            "testkit/tls",
        ])
        .args(more.iter().flat_map(|package| ["-p", package]))
        .status()
        .context("build the roles")?;
    if !status.success() {
        bail!("the build failed");
    }
    Ok(crate::workspace_root().join("target/debug"))
}

/// The VAPID key Web Push is signed with: made once at `key_file` by `steward-preflight
/// --generate-vapid-key` and kept (a new key would orphan every browser's subscription).
/// Returns its public half.
pub fn vapid_public_key(bin: &Path, key_file: &Path) -> anyhow::Result<String> {
    let flag = if key_file.exists() {
        "--vapid-public-key"
    } else {
        "--generate-vapid-key"
    };
    let output = Command::new(bin.join("steward-preflight"))
        .arg(flag)
        .arg(key_file)
        .output()
        .context("run steward-preflight")?;
    if !output.status.success() {
        bail!("{}", String::from_utf8_lossy(&output.stderr).trim());
    }
    let stdout = String::from_utf8(output.stdout).context("steward-preflight's output")?;
    stdout
        .trim()
        .strip_prefix("WEB_PUSH_PUBLIC_KEY=")
        .map(str::to_owned)
        .context("steward-preflight printed no WEB_PUSH_PUBLIC_KEY")
}

/// The notification flags and the api's `WEB_PUSH_PUBLIC_KEY` for the VAPID key at `key_file`.
pub fn web_push_environment(bin: &Path, key_file: &Path) -> anyhow::Result<Vec<(String, String)>> {
    Ok(vec![
        ("AGENT_NOTIFICATION_API_ENABLED".to_owned(), "1".to_owned()),
        ("AGENT_NOTIFICATION_DISPATCH_ENABLED".to_owned(), "1".to_owned()),
        ("WEB_PUSH_PUBLIC_KEY".to_owned(), vapid_public_key(bin, key_file)?),
    ])
}

/// The implemented roles, running: the API, a worker, the scheduler and the maintenance role,
/// and with Email mode on the async worker; with calling, the call roles too.
pub struct Stack {
    api: Child,
    worker: Child,
    scheduler: Child,
    maintenance: Child,
    async_worker: Option<Child>,
    /// The notify role, delivering Web Push ([`Stack::start_notify`]).
    notify: Option<Child>,
    /// The call-ingress listener and the call worker, with the provider stand-in
    /// ([`Stack::start_calls`]).
    calls: Vec<(&'static str, Child)>,
}

impl Stack {
    /// Provisions and migrates the database at `admin_url` as at deploy time (logins, the
    /// database, then migrations and grants as the owner), starts each role with its own login
    /// and waits until the API is ready on `listen`.
    pub fn start(
        bin: &Path,
        admin_url: &str,
        token_file: &Path,
        listen: SocketAddr,
        scopes: &str,
        log_level: &str,
        flags: &[(&str, &str)],
    ) -> anyhow::Result<Stack> {
        crate::postgres::prepare_database(bin, admin_url, flags)?;
        let login = |name: &str| pgcluster::with_user(admin_url, name);
        let (allow_root, allow) = crate::postgres::ALLOW_ROOT;
        let api = Command::new(bin.join("steward-api"))
            .env("DATABASE_URL", login("steward_api"))
            .env(allow_root, allow)
            .env("API_TOKEN_FILE", token_file)
            .env("API_LISTEN_ADDR", listen.to_string())
            .env("AUTH_SCOPES", scopes)
            .env("LOG_LEVEL", log_level)
            .envs(flags.iter().copied())
            .spawn()
            .context("start steward-api")?;
        let mut stack = Stack {
            api,
            worker: Command::new(bin.join("steward-worker"))
                .env("DATABASE_URL", login("steward_worker"))
                .env("LOG_LEVEL", log_level)
                .envs(flags.iter().copied())
                .env(allow_root, allow)
                .spawn()
                .context("start steward-worker")?,
            scheduler: Command::new(bin.join("steward-schedule"))
                .env("DATABASE_URL", login("steward_schedule"))
                .env("LOG_LEVEL", log_level)
                .envs(flags.iter().copied())
                .env(allow_root, allow)
                .spawn()
                .context("start steward-schedule")?,
            maintenance: Command::new(bin.join("steward-maintenance"))
                .env("DATABASE_URL", login("steward_maintenance"))
                .env("LOG_LEVEL", log_level)
                .envs(flags.iter().copied())
                .env(allow_root, allow)
                .spawn()
                .context("start steward-maintenance")?,
            async_worker: None,
            notify: None,
            calls: Vec::new(),
        };
        if flags.contains(&("AGENT_EMAIL_MODE_ENABLED", "1")) {
            let started = Command::new(bin.join("steward-async-worker"))
                .env("DATABASE_URL", login("steward_async_worker"))
                .env("LOG_LEVEL", log_level)
                .envs(flags.iter().copied())
                .env(allow_root, allow)
                .spawn()
                .context("start steward-async-worker");
            match started {
                Ok(child) => stack.async_worker = Some(child),
                Err(error) => {
                    stack.stop();
                    return Err(error);
                }
            }
        }
        if let Err(error) = wait_ready(listen, &mut stack.api) {
            stack.stop();
            return Err(error);
        }
        Ok(stack)
    }

    /// An error when a role has exited on its own.
    pub fn check(&mut self) -> anyhow::Result<()> {
        for (name, child) in [
            ("steward-api", &mut self.api),
            ("steward-worker", &mut self.worker),
            ("steward-schedule", &mut self.scheduler),
            ("steward-maintenance", &mut self.maintenance),
        ] {
            if let Some(status) = child.try_wait().with_context(|| format!("check {name}"))? {
                bail!("{name} exited on its own ({status})");
            }
        }
        if let Some(child) = self.async_worker.as_mut()
            && let Some(status) = child.try_wait().context("check steward-async-worker")?
        {
            bail!("steward-async-worker exited on its own ({status})");
        }
        if let Some(child) = self.notify.as_mut()
            && let Some(status) = child.try_wait().context("check steward-notify")?
        {
            bail!("steward-notify exited on its own ({status})");
        }
        for (name, child) in &mut self.calls {
            if let Some(status) = child.try_wait().with_context(|| format!("check {name}"))? {
                bail!("{name} exited on its own ({status})");
            }
        }
        Ok(())
    }

    /// Starts the notify role with its own login, delivering Web Push signed with the VAPID key
    /// at `key_file` (`flags` are the stack's, with the notification flags on).
    pub fn start_notify(
        &mut self,
        bin: &Path,
        admin_url: &str,
        log_level: &str,
        flags: &[(&str, &str)],
        key_file: &Path,
    ) -> anyhow::Result<()> {
        let (allow_root, allow) = crate::postgres::ALLOW_ROOT;
        let child = Command::new(bin.join("steward-notify"))
            .env("DATABASE_URL", pgcluster::with_user(admin_url, "steward_notify"))
            .env("LOG_LEVEL", log_level)
            .envs(flags.iter().copied())
            .env("WEB_PUSH_SUBJECT", "mailto:owner@localhost")
            .env("WEB_PUSH_VAPID_KEY_FILE", key_file)
            .env(allow_root, allow)
            .spawn()
            .context("start steward-notify")?;
        self.notify = Some(child);
        Ok(())
    }

    /// Starts the call-ingress listener and the call worker against the provider stand-in
    /// `demo`, each with its own login and only its own secret, and waits until the listener is
    /// ready; returns the call worker's process id. (`flags` are the stack's, as in
    /// [`Stack::start`].)
    pub fn start_calls(
        &mut self,
        bin: &Path,
        admin_url: &str,
        log_level: &str,
        flags: &[(&str, &str)],
        demo: &crate::demo_calls::DemoCalls,
    ) -> anyhow::Result<u32> {
        let (allow_root, allow) = crate::postgres::ALLOW_ROOT;
        let roles = [
            ("steward-call-ingress", "steward_ingress", demo.ingress_environment()),
            ("steward-call-worker", "steward_call", demo.worker_environment()),
        ];
        for (name, login, own) in roles {
            // A clean environment: the call roles refuse scopes, the owner bearer and any model
            // key, which the caller's environment (and so the other roles') may hold.
            let child = Command::new(bin.join(name))
                .env_clear()
                .envs(std::env::var_os("PATH").map(|path| ("PATH", path)))
                .env("DATABASE_URL", pgcluster::with_user(admin_url, login))
                .env("LOG_LEVEL", log_level)
                // Never the browser role's control-plane credential, which a call role refuses.
                .envs(flags.iter().copied().filter(|(name, _)| !name.starts_with("BROWSER_")))
                .envs(own)
                .env(allow_root, allow)
                .spawn()
                .with_context(|| format!("start {name}"))?;
            self.calls.push((name, child));
        }
        let (name, ingress) = &mut self.calls[0];
        crate::stand_in::wait_healthy(name, demo.ingress(), ingress, "")?;
        Ok(self.calls[1].1.id())
    }

    /// Each running role's binary name and process id.
    pub fn processes(&self) -> Vec<(&'static str, u32)> {
        let mut processes = vec![
            ("steward-api", self.api.id()),
            ("steward-worker", self.worker.id()),
            ("steward-schedule", self.scheduler.id()),
            ("steward-maintenance", self.maintenance.id()),
        ];
        processes.extend(
            self.async_worker
                .as_ref()
                .map(|child| ("steward-async-worker", child.id())),
        );
        processes.extend(self.notify.as_ref().map(|child| ("steward-notify", child.id())));
        processes.extend(self.calls.iter().map(|(name, child)| (*name, child.id())));
        processes
    }

    pub fn stop(&mut self) {
        use crate::stop;
        stop(&mut self.api);
        stop(&mut self.worker);
        stop(&mut self.scheduler);
        stop(&mut self.maintenance);
        if let Some(child) = self.async_worker.as_mut() {
            stop(child);
        }
        if let Some(child) = self.notify.as_mut() {
            stop(child);
        }
        for (_, child) in &mut self.calls {
            stop(child);
        }
    }
}

/// Creates an owner-only token of 64 hex characters from the kernel's random source, once.
pub fn ensure_token(path: &Path) -> anyhow::Result<()> {
    if path.exists() {
        return Ok(());
    }
    let mut random = [0u8; 32];
    fs::File::open("/dev/urandom")
        .and_then(|mut source| source.read_exact(&mut random))
        .context("read /dev/urandom")?;
    let token: String = random.iter().map(|byte| format!("{byte:02x}")).collect();
    let mut file = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)
        .with_context(|| format!("create {}", path.display()))?;
    writeln!(file, "{token}").context("write the token")?;
    Ok(())
}

/// A JSON string literal.
fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}

/// Polls the API's `GET /health/ready` until it answers.
pub(crate) fn wait_ready(listen: SocketAddr, api: &mut Child) -> anyhow::Result<()> {
    crate::stand_in::wait_healthy(
        "steward-api",
        listen,
        api,
        &format!("; is port {} free? (try --port)", listen.port()),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_strings_are_escaped() {
        assert_eq!(json_string(r#"a"b\c"#), r#""a\"b\\c""#);
        assert_eq!(json_string("x\ny"), r#""x\u000ay""#);
        assert_eq!(
            json_string("postgres://u@h/db?host=/tmp/x"),
            r#""postgres://u@h/db?host=/tmp/x""#
        );
    }
}

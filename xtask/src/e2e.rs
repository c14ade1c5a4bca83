//! The web client's end-to-end tests (`web/e2e/*.test.mjs`): Node's test runner drives Debian's
//! Chromium through playwright-core against the real stack (API, worker, scheduler and the
//! scripted model; Email mode on, with the async worker and the demo mailbox of
//! `steward-demo-mail`; calling on, with the call-ingress listener, the call worker and the call
//! provider stand-in `steward-demo-calls`; the hosted browser on, with the browser role and the
//! demo tea shop `steward-demo-shop`) on a fresh database of the caller's cluster, on a free
//! loopback port.
//!
//! Before the browser runs, `tsc --checkJs` checks the client's types (`web/tsconfig.json`) and
//! Node runs the unit tests of `web/unit`.
//! What it needs is installed when missing: Debian's `chromium` (and a font), and the pinned npm
//! packages of `web/e2e/package-lock.json` (`npm ci`, again whenever the lock changes).
//! Screenshots go to `target/web-e2e/screenshots`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, bail};

pub(crate) use crate::postgres::{CHROMIUM, ensure_chromium};

/// Runs every `*.test.mjs` of `web/e2e` against a stack on `admin_url`'s server.
pub fn run(admin_url: &str) -> anyhow::Result<()> {
    run_only(admin_url, &[])
}

/// Runs the `*.test.mjs` files of `web/e2e` whose names contain one of `names` (every one when
/// `names` is empty) against a stack on `admin_url`'s server.
pub fn run_only(admin_url: &str, names: &[String]) -> anyhow::Result<()> {
    ensure_chromium()?;
    let e2e = crate::workspace_root().join("web/e2e");
    ensure_packages(&e2e)?;
    let mut tests: Vec<PathBuf> = fs::read_dir(&e2e)
        .context("read web/e2e")?
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.to_str().is_some_and(|name| name.ends_with(".test.mjs")))
        .filter(|path| {
            let file = path.file_name().and_then(|name| name.to_str()).unwrap_or_default();
            names.is_empty() || names.iter().any(|name| file.contains(name.as_str()))
        })
        .collect();
    tests.sort();
    typecheck(&e2e)?;
    unit(&e2e)?;
    let bin = crate::dev::build_roles()?;
    let work = crate::contract::private_dir("e2e")?;
    let token_file = work.join("api-token");
    crate::dev::ensure_token(&token_file)?;
    let listen = crate::contract::free_port()?;
    let database = crate::contract::with_database(admin_url, "steward_web");
    let artifacts = crate::workspace_root().join("target/web-e2e");
    let _ = fs::remove_dir_all(artifacts.join("screenshots"));
    let mut demo = crate::demo_mail::DemoMail::start(&bin, &work.join("demo-mail"))?;
    let mut calls = match crate::demo_calls::DemoCalls::start(&bin, &work.join("calls")) {
        Ok(calls) => calls,
        Err(error) => {
            demo.stop();
            return Err(error);
        }
    };
    let mut website = match crate::demo_browser::DemoBrowser::start(&bin, &work.join("browser"), "warn") {
        Ok(website) => website,
        Err(error) => {
            demo.stop();
            calls.stop();
            return Err(error);
        }
    };
    let started = (|| {
        let mut environment = demo.environment();
        // Calling's variables include both notification flags, as `crate::contract::FLAGS`.
        environment.extend(calls.environment());
        environment.push(("AGENT_MEMORY_API_ENABLED".to_owned(), "1".to_owned()));
        environment.extend(website.environment());
        // Web Push offered (the test delivers pushes itself, through the DevTools protocol).
        environment.extend(crate::dev::web_push_environment(&bin, &work.join("vapid-key"))?);
        let flags: Vec<(&str, &str)> = environment
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect();
        let mut stack = crate::dev::Stack::start(
            &bin,
            &database,
            &token_file,
            listen,
            // Website Access's scopes too: the e2e stack runs the browser role.
            &format!("{},browser.read,browser.write", crate::contract::ALL_SCOPES),
            "warn",
            &flags,
        )?;
        match stack.start_calls(&bin, &database, "warn", &flags, &calls) {
            Ok(call_worker) => Ok((stack, call_worker)),
            Err(error) => {
                stack.stop();
                Err(error)
            }
        }
    })();
    let control_url = calls.control_url().to_owned();
    let (mut stack, call_worker) = match started {
        Ok(started) => started,
        Err(error) => {
            demo.stop();
            calls.stop();
            website.stop();
            return Err(error);
        }
    };
    let orders_url = website.shop("DEMO_SHOP_ORDERS_URL").unwrap_or_default().to_owned();
    println!("e2e: {} test files in Chromium against http://{listen}", tests.len());
    let status = Command::new("node")
        .args(["--test", "--test-concurrency=1", "--test-reporter=spec"])
        .args(&tests)
        .current_dir(&e2e)
        .env("STEWARD_URL", format!("http://{listen}"))
        .env("STEWARD_TOKEN_FILE", &token_file)
        .env("STEWARD_ARTIFACTS", &artifacts)
        // The call provider stand-in's control address, and the call worker (which a test
        // pauses to catch an approved call before it is placed).
        .env("STEWARD_DEMO_CALLS_URL", &control_url)
        .env("STEWARD_CALL_WORKER_PID", call_worker.to_string())
        // Where the demo tea shop lists the orders the agent placed.
        .env("STEWARD_DEMO_SHOP_ORDERS_URL", &orders_url)
        .env("CHROMIUM", CHROMIUM)
        .status()
        .context("run node --test (is Node.js installed?)");
    let alive = stack
        .check()
        .and_then(|()| demo.check())
        .and_then(|()| calls.check())
        .and_then(|()| website.check());
    stack.stop();
    demo.stop();
    calls.stop();
    website.stop();
    let _ = fs::remove_dir_all(&work);
    alive.context("a role died during the web client's tests")?;
    if !status?.success() {
        bail!("the web client's end-to-end tests failed (see above)");
    }
    println!("e2e: screenshots in {}", artifacts.join("screenshots").display());
    Ok(())
}

/// `tsc --checkJs` over the web client (`web/tsconfig.json`): its JSDoc types, the vendored
/// modules' declarations and the DOM's.
fn typecheck(e2e: &Path) -> anyhow::Result<()> {
    println!("e2e: type-checking the web client (tsc --checkJs)");
    let status = Command::new(e2e.join("node_modules/.bin/tsc"))
        .args(["-p", "../tsconfig.json"])
        .current_dir(e2e)
        .status()
        .context("run tsc")?;
    if !status.success() {
        bail!("the web client does not type-check (see above)");
    }
    Ok(())
}

/// The web client's unit tests (`web/unit/*.test.mjs`, Node's test runner, no browser): the
/// Markdown renderer and the approval proof, on the vectors the terminal client's SDK reads too.
fn unit(e2e: &Path) -> anyhow::Result<()> {
    println!("e2e: the web client's unit tests (node --test web/unit)");
    let status = Command::new("node")
        .args(["--test", "--test-reporter=spec", "../unit/"])
        .current_dir(e2e)
        .status()
        .context("run node --test (is Node.js installed?)")?;
    if !status.success() {
        bail!("the web client's unit tests failed (see above)");
    }
    Ok(())
}

/// `npm ci` when the installed packages are missing or older than the lock file.
pub(crate) fn ensure_packages(e2e: &Path) -> anyhow::Result<()> {
    let modified = |path: &Path| fs::metadata(path).and_then(|meta| meta.modified()).ok();
    let lock = modified(&e2e.join("package-lock.json")).context("web/e2e/package-lock.json is missing")?;
    let installed = modified(&e2e.join("node_modules/.package-lock.json"));
    if installed.is_some_and(|installed| installed >= lock) {
        return Ok(());
    }
    println!("e2e: installing the pinned npm packages (npm ci)");
    let status = Command::new("npm")
        .args(["ci", "--no-audit", "--no-fund"])
        .current_dir(e2e)
        .status()
        .context("run npm ci (is npm installed?)")?;
    if !status.success() {
        bail!("npm ci failed in web/e2e");
    }
    Ok(())
}

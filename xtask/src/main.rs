//! Developer commands.
//!
//! - `cargo xtask dev [--port N]`: runs every implemented role on a private, persistent PostgreSQL
//!   cluster under `var/`, with a generated API token; Ctrl-C stops everything.
//! - `cargo xtask test [ARGS...]`: the whole test suite against a throwaway cluster; ARGS go to
//!   `cargo test`.
//! - `cargo xtask contract`: the contract test alone: schemathesis, every check, against the
//!   stack on a throwaway cluster (the whole `test` run ends with it).
//! - `cargo xtask e2e [NAME...]`: the web client's browser tests alone (only the files whose
//!   names contain one of the NAMEs, when given).
//! - `cargo xtask fuzz [--minutes N]`: the property tests of the parsers of untrusted input, round
//!   after round with fresh seeds, for N minutes (5 by default).
//! - `cargo xtask soak [--minutes N]`: the whole stack under a day-shaped load for N minutes (10
//!   by default) while every role is killed and restarted and PostgreSQL restarts once; then the
//!   checks that nothing was lost, repeated or stuck, and the figures (`docs/soak.md`).
//! - `cargo xtask bench [OPTIONS]`: release builds of every role on a durable temporary cluster;
//!   each figure beside its reference from the same run, printed and written (with a chart)
//!   under `docs/bench/`.
//! - `cargo xtask preflight [ARGS...]`: the host preflight (`steward-preflight`, whose ARGS it
//!   takes), run as the current user; exits non-zero when any check fails.
//! - `cargo xtask async-worker ARGS...`: `steward-async-worker ARGS` (`calibrate`,
//!   `junk-packet`) with the environment of the async worker of a running `cargo xtask dev
//!   --demo-mail`: its database login and the demo account.

mod bench;
mod chart;
mod contract;
mod demo_browser;
mod demo_calls;
mod demo_mail;
mod demo_seed;
mod dev;
mod e2e;
mod fuzz;
mod postgres;
mod soak;
mod stand_in;
mod test;

use std::path::PathBuf;
use std::process::ExitCode;

const USAGE: &str = "usage: cargo xtask dev [--port N] | cargo xtask test [CARGO-TEST-ARGS...] | cargo xtask contract | cargo xtask e2e [NAME...] | cargo xtask fuzz [--minutes N] | cargo xtask soak [--minutes N] | cargo xtask bench [--clients N] [--submits N] [--streams N] [--idle-streams N] [--replay-events N] [--schedules N] [--no-langgraph] | cargo xtask preflight [PREFLIGHT-ARGS...] | cargo xtask async-worker calibrate|junk-packet [ARGS...]";

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let result = match args.next().as_deref() {
        Some("dev") => dev::run(args.collect()),
        Some("test") => test::run(args.collect()),
        Some("contract") => test::contract(),
        Some("e2e") => test::e2e(args.collect()),
        Some("fuzz") => fuzz::run(args.collect()),
        Some("soak") => soak::run(args.collect()),
        Some("bench") => bench::run(args.collect()),
        Some("preflight") => preflight(args.collect()),
        Some("async-worker") => async_worker(args.collect()),
        Some("-h" | "--help") => {
            println!("{USAGE}");
            return ExitCode::SUCCESS;
        }
        Some(other) => Err(anyhow::anyhow!("unknown command `{other}`\n{USAGE}")),
        None => Err(anyhow::anyhow!("{USAGE}")),
    };
    match result {
        Ok(code) => code,
        Err(error) => {
            eprintln!("xtask: {error:#}");
            ExitCode::FAILURE
        }
    }
}

/// Builds and runs `steward-preflight` with `args`, passing its exit status on.
fn preflight(args: Vec<String>) -> anyhow::Result<ExitCode> {
    let status = cargo()
        .args(["run", "--quiet", "--locked", "-p", "steward-preflight", "--"])
        .args(&args)
        .status()
        .map_err(|error| anyhow::anyhow!("run steward-preflight: {error}"))?;
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        None => ExitCode::FAILURE,
    })
}

/// Runs `steward-async-worker ARGS` as the running dev stack's async worker (its login, the
/// demo account), passing its exit status on.
fn async_worker(args: Vec<String>) -> anyhow::Result<ExitCode> {
    use anyhow::Context;
    let var = workspace_root().join("var");
    let described: serde_json::Value = serde_json::from_slice(
        &std::fs::read(var.join("dev.json"))
            .context("read var/dev.json (is `cargo xtask dev --demo-mail` running?)")?,
    )
    .context("var/dev.json")?;
    let admin = described["database_url"]
        .as_str()
        .context("var/dev.json names no database")?;
    let environment = demo_mail::DemoMail::environment_in(&var.join("demo-mail"))?;
    let bin = dev::build_roles()?;
    let status = std::process::Command::new(bin.join("steward-async-worker"))
        .args(&args)
        .env("DATABASE_URL", pgcluster::with_user(admin, "steward_async_worker"))
        .env(postgres::ALLOW_ROOT.0, postgres::ALLOW_ROOT.1)
        .envs(environment)
        .status()
        .context("run steward-async-worker")?;
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        None => ExitCode::FAILURE,
    })
}

/// Stops a child process: `SIGTERM` while it still runs (and `SIGCONT`, so that one a test
/// paused receives it), then waits for it to end.
fn stop(child: &mut std::process::Child) {
    use nix::sys::signal::{Signal, kill};
    use nix::unistd::Pid;
    if matches!(child.try_wait(), Ok(None)) {
        let pid = Pid::from_raw(child.id() as i32);
        let _ = kill(pid, Signal::SIGTERM);
        let _ = kill(pid, Signal::SIGCONT);
    }
    let _ = child.wait();
}

/// The workspace root (xtask lives one level below it).
fn workspace_root() -> PathBuf {
    let manifest = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    manifest.parent().map(PathBuf::from).unwrap_or(manifest)
}

fn cargo() -> std::process::Command {
    let mut command = std::process::Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    command.current_dir(workspace_root());
    command
}

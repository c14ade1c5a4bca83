//! `cargo xtask test`: one throwaway cluster for the whole run, shared through `DATABASE_URL`
//! (each test still gets its own database), removed afterwards. The whole suite (no arguments)
//! ends with the contract test (`contract`) and the web client's end-to-end tests (`e2e`) on the
//! same cluster, then a two-minute soak (`soak`) on a cluster of its own.

use std::process::ExitCode;

use std::os::unix::process::ExitStatusExt;

use anyhow::Context;
use nix::sys::signal::{SigSet, Signal};
use pgcluster::Cluster;

pub fn run(args: Vec<String>) -> anyhow::Result<ExitCode> {
    let binaries = crate::postgres::ensure_binaries()?;
    crate::postgres::ensure_test_tools()?;
    crate::e2e::ensure_chromium()?;
    let cluster = Cluster::temporary(&binaries).context("start the test cluster")?;
    // `-p <crate>` narrows the run; otherwise the whole workspace is tested.
    let narrowed = args.iter().any(|arg| arg == "-p" || arg.starts_with("--package"));
    let mut child = crate::cargo()
        .args(["test", "--locked"])
        .args((!narrowed).then_some("--workspace"))
        .args(&args)
        .env("DATABASE_URL", cluster.url("postgres"))
        .spawn()
        .context("run cargo test")?;
    // Ctrl-C reaches cargo test directly; we outlive it to remove the cluster.
    let mut signals = SigSet::empty();
    signals.add(Signal::SIGINT);
    signals.add(Signal::SIGTERM);
    signals.thread_block().context("block interrupts while tests run")?;
    let mut status = child.wait().context("wait for cargo test")?;
    // The contract test's roles inherit the signal mask: they must be able to receive SIGTERM.
    signals.thread_unblock().context("unblock interrupts")?;
    if status.success() && args.is_empty() {
        for (name, outcome) in [
            ("contract", crate::contract::run(&cluster.url("postgres"))),
            ("web client", crate::e2e::run(&cluster.url("postgres"))),
            ("soak", crate::soak::short_pass()),
        ] {
            if let Err(error) = outcome {
                eprintln!("xtask: {name}: {error:#}");
                status = std::process::ExitStatus::from_raw(1 << 8);
            }
        }
    }
    drop(cluster);
    Ok(match status.code() {
        Some(0) => ExitCode::SUCCESS,
        Some(code) => ExitCode::from(u8::try_from(code).unwrap_or(1)),
        None => ExitCode::FAILURE,
    })
}

/// `cargo xtask e2e [NAME...]`: the web client's end-to-end tests alone (the files whose names
/// contain one of `names`, or all), on a throwaway cluster.
pub fn e2e(names: Vec<String>) -> anyhow::Result<ExitCode> {
    let binaries = crate::postgres::ensure_binaries()?;
    let cluster = Cluster::temporary(&binaries).context("start the test cluster")?;
    let outcome = crate::e2e::run_only(&cluster.url("postgres"), &names);
    drop(cluster);
    outcome.map(|()| ExitCode::SUCCESS)
}

/// `cargo xtask contract`: the contract test alone, on a throwaway cluster.
pub fn contract() -> anyhow::Result<ExitCode> {
    let binaries = crate::postgres::ensure_binaries()?;
    let cluster = Cluster::temporary(&binaries).context("start the test cluster")?;
    let outcome = crate::contract::run(&cluster.url("postgres"));
    drop(cluster);
    outcome.map(|()| ExitCode::SUCCESS)
}

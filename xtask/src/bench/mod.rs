//! `cargo xtask bench`: release builds of every role against a durable temporary cluster (fsync
//! on, so commit rates are PostgreSQL's real ones), each figure measured beside its reference in
//! the same run (the machine is shared and noisy: only the ratios mean much). The table is
//! printed and written, with a chart, under `docs/bench/`.

mod features;
mod references;
mod report;
mod rest;
mod roles;
mod streams;
#[cfg(test)]
mod tests;
mod tools;
mod web;

use std::fmt::Write as _;
use std::io::Write as _;
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::net::UnixDatagram;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use pgcluster::{Cluster, Durability};
use serde_json::Value;

use self::report::*;
use self::roles::*;
use self::tools::*;

const USAGE: &str = "usage: cargo xtask bench [--clients N] [--submits N] [--streams N] [--idle-streams N] \
                     [--replay-events N] [--schedules N] [--no-langgraph] [--perf DIR]";

struct Options {
    clients: usize,
    submits: usize,
    streams: usize,
    idle_streams: usize,
    replay_events: usize,
    schedules: usize,
    langgraph: bool,
    /// Where to write a system-wide `perf` profile of each measurement, when asked.
    perf: Option<PathBuf>,
}

impl Options {
    fn parse(args: Vec<String>) -> anyhow::Result<Self> {
        let mut options = Options {
            clients: 32,
            submits: 4000,
            streams: 100,
            idle_streams: 10_000,
            replay_events: 100_000,
            schedules: 10_000,
            langgraph: true,
            perf: None,
        };
        let mut args = args.into_iter();
        while let Some(arg) = args.next() {
            let slot = match arg.as_str() {
                "--no-langgraph" => {
                    options.langgraph = false;
                    continue;
                }
                "--perf" => {
                    let dir = args
                        .next()
                        .with_context(|| format!("--perf needs a directory ({USAGE})"))?;
                    options.perf = Some(PathBuf::from(dir));
                    continue;
                }
                "--clients" => &mut options.clients,
                "--submits" => &mut options.submits,
                "--streams" => &mut options.streams,
                "--idle-streams" => &mut options.idle_streams,
                "--replay-events" => &mut options.replay_events,
                "--schedules" => &mut options.schedules,
                other => bail!("unknown argument `{other}` ({USAGE})"),
            };
            let value = args.next().with_context(|| format!("{arg} needs a value ({USAGE})"))?;
            *slot = value
                .parse()
                .ok()
                .filter(|number| *number > 0)
                .with_context(|| format!("{arg} `{value}` is not a positive number"))?;
        }
        Ok(options)
    }
}

/// Everything a measurement needs: the binaries, the cluster and a scratch directory.
struct Bench {
    bin: PathBuf,
    binaries: pgcluster::Binaries,
    cluster: Cluster,
    database_url: String,
    work: PathBuf,
    token_file: PathBuf,
    options: Options,
    /// The submit rate measured against the API, for the LangGraph comparison.
    submit_rate: std::cell::Cell<Option<f64>>,
}

pub fn run(args: Vec<String>) -> anyhow::Result<ExitCode> {
    let options = Options::parse(args)?;
    let root = crate::workspace_root();
    let mut build = crate::cargo();
    build.args(["build", "--release", "--locked"]);
    for package in ROLES
        .iter()
        .map(|role| role.binary)
        // The whole stack at rest runs `cargo xtask dev --demo-mail`'s roles, its mail provider
        // stand-in (testkit's `steward-demo-mail`) and makes a VAPID key with the preflight.
        .chain([
            "steward-migrate",
            "steward-bench",
            "steward-maintenance",
            "steward-async-worker",
            "steward-preflight",
            "testkit",
        ])
    {
        build.args(["-p", package]);
    }
    build.args(["--features", "testkit/tls"]);
    if !build.status().context("build release binaries")?.success() {
        bail!("the release build failed");
    }
    raise_file_limit();
    let binaries = crate::postgres::ensure_binaries()?;
    let cluster = Cluster::temporary_with(&binaries, Durability::Durable).context("start the benchmark cluster")?;
    let database_url = cluster.url("steward_bench");
    let bin = root.join("target/release");
    crate::postgres::prepare_database(&bin, &database_url, &[])?;
    let work = std::env::temp_dir().join(format!("steward-bench-{}", std::process::id()));
    std::fs::create_dir_all(&work).context("create the bench directory")?;
    let token_file = work.join("api-token");
    write_secret(
        &token_file,
        &format!("bench-token-{}-0123456789abcdef0123456789", std::process::id()),
    )?;
    let bench = Bench {
        bin,
        binaries,
        cluster,
        database_url,
        work,
        token_file,
        options,
        submit_rate: std::cell::Cell::new(None),
    };
    let mut report = Report::default();
    println!("| measurement | value | reference (same run) | target | met |\n|---|---|---|---|---|");
    let outcome = bench.measure(&mut report);
    let machine = machine(&bench);
    let _ = std::fs::remove_dir_all(&bench.work);
    drop(bench);
    outcome?;
    let docs = root.join("docs/bench");
    std::fs::create_dir_all(&docs).context("create docs/bench")?;
    let text = format!(
        "# Benchmark\n\nWritten by `cargo xtask bench`; see [docs/benchmark.md](../benchmark.md) for what each figure is.\n\n\
         {machine}\n\n{}\n![chart](bench.png)\n",
        report.table()
    );
    std::fs::write(docs.join("README.md"), text).context("write docs/bench/README.md")?;
    let bars: Vec<crate::chart::Bar> = report
        .rows
        .iter()
        .filter_map(|row| {
            Some(crate::chart::Bar {
                label: row.measurement.replace('`', "").chars().take(70).collect(),
                text: format!("{} (target {})", row.value, row.goal.as_ref()?.2).replace('`', ""),
                reached: row.reached()?,
            })
        })
        .collect();
    crate::chart::draw(&docs.join("bench.png"), "Steward against its targets", &machine, &bars)?;
    println!("\n{machine}\nwritten to docs/bench/README.md and docs/bench/bench.png");
    Ok(ExitCode::SUCCESS)
}

impl Bench {
    fn measure(&self, report: &mut Report) -> anyhow::Result<()> {
        for role in ROLES {
            if let Err(error) = self.role(role, report) {
                report.missed(&format!("`{}` start", role.binary), &error);
            }
        }
        let mut api = self.start_api()?;
        let outcome = self.against_api(&mut api, report);
        api.stop();
        outcome?;
        if let Err(error) = self.model_deltas(report) {
            report.missed("model delta → SSE client latency", &error);
        }
        if let Err(error) = self.schedules(report) {
            report.missed("schedule lateness", &error);
        }
        if let Err(error) = self.at_rest(report) {
            report.missed("whole stack at rest", &error);
        }
        if let Err(error) = self.email_inbox(report) {
            report.missed("Email inbox first page", &error);
        }
        if let Err(error) = self.email_refresh(report) {
            report.missed("Email incremental refresh", &error);
        }
        if self.options.langgraph {
            if let Err(error) = self.langgraph(report) {
                report.missed("LangGraph API server", &error);
            }
        } else {
            report.push(Row::new("LangGraph API server", "skipped (--no-langgraph)"));
        }
        Ok(())
    }
}

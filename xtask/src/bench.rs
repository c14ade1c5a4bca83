//! `cargo xtask bench`: release builds of every role against a durable temporary cluster (fsync
//! on, so commit rates are PostgreSQL's real ones), each figure measured beside its reference in
//! the same run (the machine is shared and noisy: only the ratios mean much). The table is
//! printed and written, with a chart, under `docs/bench/`.

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

/// What a figure is held to.
#[derive(Clone, Copy)]
enum Goal {
    AtLeast(f64),
    AtMost(f64),
}

/// One line of the report.
struct Row {
    measurement: String,
    value: String,
    reference: String,
    /// The compared figure (a ratio or an absolute value) and what it is held to.
    goal: Option<(f64, Goal, String)>,
}

impl Row {
    fn new(measurement: impl Into<String>, value: impl Into<String>) -> Self {
        Row {
            measurement: measurement.into(),
            value: value.into(),
            reference: String::new(),
            goal: None,
        }
    }

    fn reference(mut self, reference: impl Into<String>) -> Self {
        self.reference = reference.into();
        self
    }

    fn goal(mut self, figure: f64, goal: Goal, text: impl Into<String>) -> Self {
        self.goal = Some((figure, goal, text.into()));
        self
    }

    /// Share of the target reached, in percent.
    fn reached(&self) -> Option<f64> {
        let (figure, goal, _) = self.goal.as_ref()?;
        Some(match *goal {
            Goal::AtLeast(target) => 100.0 * figure / target,
            Goal::AtMost(target) => 100.0 * target / figure.max(f64::MIN_POSITIVE),
        })
    }
}

#[derive(Default)]
struct Report {
    rows: Vec<Row>,
}

impl Report {
    fn push(&mut self, row: Row) {
        println!("{}", self.line(&row));
        self.rows.push(row);
    }

    fn missed(&mut self, measurement: &str, error: &anyhow::Error) {
        self.push(Row::new(measurement, format!("not measured: {error:#}")));
    }

    fn line(&self, row: &Row) -> String {
        let (target, met) = match (&row.goal, row.reached()) {
            (Some((_, _, text)), Some(reached)) => (text.as_str(), if reached >= 100.0 { "yes" } else { "no" }),
            _ => ("", ""),
        };
        format!(
            "| {} | {} | {} | {target} | {met} |",
            row.measurement, row.value, row.reference
        )
    }

    fn table(&self) -> String {
        let mut table =
            String::from("| measurement | value | reference (same run) | target | met |\n|---|---|---|---|---|\n");
        for row in &self.rows {
            let _ = writeln!(table, "{}", self.line(row));
        }
        table
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
        .chain(["steward-migrate", "steward-bench"])
    {
        build.args(["-p", package]);
    }
    if !build.status().context("build release binaries")?.success() {
        bail!("the release build failed");
    }
    raise_file_limit();
    let binaries = crate::postgres::ensure_binaries()?;
    let cluster = Cluster::temporary_with(&binaries, Durability::Durable).context("start the benchmark cluster")?;
    let database_url = cluster.url("steward_bench");
    let bin = root.join("target/release");
    crate::postgres::prepare_database(&bin, &database_url)?;
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

    fn against_api(&self, api: &mut Process, report: &mut Report) -> anyhow::Result<()> {
        let base = api.base.clone();
        let clients = self.options.clients.to_string();
        let submits = self.steward_bench(&[
            "submits",
            &base,
            path(&self.token_file),
            "200",
            &self.options.submits.to_string(),
            &clients,
        ])?;
        let rate = number(&submits, "submits_per_second")?;
        report.push(Row::new(
            "submit → first persisted event on the stream, p50 / p99 (sequential)",
            format!(
                "{:.2} / {:.2} ms",
                number(&submits, "first_event_p50_ms")?,
                number(&submits, "first_event_p99_ms")?
            ),
        ));
        match self.commit_ceiling(&clients) {
            Ok(ceiling) => report.push(
                Row::new(
                    format!("message submits per second ({clients} clients)"),
                    format!("{rate:.0}/s = {:.0}% of the ceiling", 100.0 * rate / ceiling),
                )
                .reference(format!("PostgreSQL one-row insert commits (pgbench): {ceiling:.0}/s"))
                .goal(rate / ceiling, Goal::AtLeast(0.5), "≥ 50% of the ceiling"),
            ),
            Err(error) => report.push(Row::new(
                format!("message submits per second ({clients} clients)"),
                format!("{rate:.0}/s; ceiling not measured: {error:#}"),
            )),
        }
        self.submit_rate.set(Some(rate));
        // No worker ran during the submits: their runs wait in the queue. Set them aside, so the
        // stream figures measure their own runs, not a worker draining thousands first.
        self.psql(
            "steward_bench",
            "UPDATE runs SET state = 'cancelled', outcome_reason = 'requested', finished_at = now(), updated_at = now() \
             WHERE state = 'queued'",
        )?;

        let mut worker = self.start_role(role("steward-worker"), &[])?;
        let events = self.steward_bench(&[
            "events",
            &base,
            path(&self.token_file),
            &self.options.streams.to_string(),
            "15",
        ]);
        worker.stop();
        match events {
            Ok(events) => {
                let p99 = number(&events, "p99_ms")?;
                report.push(
                    Row::new(
                        format!(
                            "persisted event → SSE client, p50 / p99 ({} live streams)",
                            self.options.streams
                        ),
                        format!("{:.2} / {p99:.2} ms", number(&events, "p50_ms")?),
                    )
                    .reference(format!(
                        "{} frames of {} runs",
                        number(&events, "frames")?,
                        number(&events, "runs")?
                    ))
                    .goal(p99, Goal::AtMost(5.0), "p99 ≤ 5 ms"),
                );
            }
            Err(error) => report.missed("persisted event → SSE client latency", &error),
        }

        let idle = self.steward_bench(&[
            "idle",
            &base,
            path(&self.token_file),
            &self.options.idle_streams.to_string(),
            &api.child.id().to_string(),
            "20",
        ]);
        // The same streams held by bare axum on the same HTTP stack (no database, no state):
        // what an idle stream costs before any of Steward's own work.
        let floor = self.floor_streams();
        match idle {
            Ok(idle) => {
                let mib = number(&idle, "rss_kib")? / 1024.0;
                let before = number(&idle, "rss_before_kib")? / 1024.0;
                let mut reference = format!("{before:.1} MiB before");
                match floor {
                    Ok((floor_before, floor_held)) => reference.push_str(&format!(
                        "; bare axum holding the same streams: {:.1} MiB ({:.1} before)",
                        floor_held / 1024.0,
                        floor_before / 1024.0
                    )),
                    Err(error) => eprintln!("bench: the bare axum reference was not measured: {error:#}"),
                }
                report.push(
                    Row::new(
                        format!(
                            "`steward-api` resident memory holding {} idle streams",
                            self.options.idle_streams
                        ),
                        format!("{mib:.1} MiB"),
                    )
                    .reference(reference)
                    .goal(mib, Goal::AtMost(200.0), "≤ 200 MiB"),
                );
            }
            Err(error) => report.missed("idle streams", &error),
        }

        if let Err(error) = self.replay(&base, report) {
            report.missed("replay", &error);
        }
        if let Err(error) = self.web_client(&base, report) {
            report.missed("web client", &error);
        }
        Ok(())
    }

    /// The web client's budgets, measured in Debian's Chromium by `web/e2e/bench.mjs`: what the
    /// first load transfers of script and style, the first paint beside a static page's served
    /// by Node on loopback, and a conversation of 2,000 persisted events (runs of a message, a
    /// Markdown answer and the run's end) opened and scrolled through end to end.
    fn web_client(&self, base: &str, report: &mut Report) -> anyhow::Result<()> {
        const EVENTS: u32 = 2000;
        crate::e2e::ensure_chromium()?;
        let e2e = crate::workspace_root().join("web/e2e");
        crate::e2e::ensure_packages(&e2e)?;
        let session = self.psql(
            "steward_bench",
            "SELECT id FROM sessions WHERE last_event_seq = 0 ORDER BY created_at LIMIT 1",
        )?;
        if session.is_empty() {
            bail!("no empty session to fill");
        }
        self.psql(
            "steward_bench",
            &format!(
                "BEGIN;
                 INSERT INTO events (session_id, seq, run_id, kind, payload, created_at)
                 SELECT '{session}', n, NULL,
                   CASE n % 3 WHEN 1 THEN 'user.message.created' WHEN 2 THEN 'assistant.message' ELSE 'run.completed' END,
                   CASE n % 3
                     WHEN 1 THEN jsonb_build_object('run_id', md5('run' || (n - 1) / 3)::uuid, 'message',
                       jsonb_build_object('text', 'Question number ' || (n - 1) / 3 || ': what about the **plan**?',
                                          'attachments', '[]'::jsonb))
                     WHEN 2 THEN jsonb_build_object('run_id', md5('run' || (n - 1) / 3)::uuid, 'step', 1,
                       'tool_calls', '[]'::jsonb,
                       'usage', jsonb_build_object('input_tokens', 10, 'output_tokens', 40, 'cost', '0'),
                       'text', 'Here is answer ' || (n - 1) / 3 || E':\n\n- first, **check** the list\n- then `run it`\n\n'
                               || E'```\ncargo xtask dev\n```\n\n| a | b |\n|---|---|\n| 1 | 2 |')
                     ELSE jsonb_build_object('run_id', md5('run' || (n - 1) / 3)::uuid, 'state', 'completed',
                       'usage', jsonb_build_object('steps', 1, 'model_calls', 1, 'tool_calls', 0,
                                                   'input_tokens', 10, 'output_tokens', 40, 'cost', '0'))
                   END,
                   clock_timestamp()
                 FROM generate_series(1, {EVENTS}) AS n;
                 UPDATE sessions SET last_event_seq = {EVENTS} WHERE id = '{session}';
                 COMMIT;"
            ),
        )?;
        let output = Command::new("node")
            .args(["bench.mjs", &session, &EVENTS.to_string()])
            .current_dir(&e2e)
            .env("STEWARD_URL", base)
            .env("STEWARD_TOKEN_FILE", &self.token_file)
            .env("STEWARD_ARTIFACTS", self.work.join("web"))
            .env("CHROMIUM", crate::e2e::CHROMIUM)
            .stderr(std::process::Stdio::inherit())
            .output()
            .context("run node web/e2e/bench.mjs")?;
        if !output.status.success() {
            bail!("web/e2e/bench.mjs failed ({})", output.status);
        }
        let web: Value = serde_json::from_slice(&output.stdout).context("web/e2e/bench.mjs printed no JSON")?;
        let kb = number(&web, "shell_bytes")? / 1000.0;
        report.push(
            Row::new(
                "web client first load: script and style, compressed",
                format!("{kb:.1} KB in {} files", number(&web, "shell_assets")?),
            )
            .reference("brotli, as Chromium asks")
            .goal(kb, Goal::AtMost(60.0), "≤ 60 KB"),
        );
        let paint = number(&web, "first_paint_ms")?;
        report.push(
            Row::new(
                "web client first paint (cold, loopback, median of 5)",
                format!("{paint:.0} ms"),
            )
            .reference(format!(
                "a static page from Node on loopback: {:.0} ms",
                number(&web, "reference_first_paint_ms")?
            ))
            .goal(paint, Goal::AtMost(300.0), "≤ 300 ms"),
        );
        let opening = number(&web, "longest_task_opening_ms")?;
        let scrolling = number(&web, "longest_task_scrolling_ms")?;
        report.push(
            Row::new(
                format!("web client: conversation of {EVENTS} events, longest task opening / scrolling"),
                format!(
                    "{opening:.0} / {scrolling:.0} ms (last answer shown after {:.0} ms; {} messages rendered)",
                    number(&web, "open_ms")?,
                    number(&web, "messages")?
                ),
            )
            .reference("long tasks as Chromium reports them (50 ms and over; 0: none)")
            .goal(opening.max(scrolling), Goal::AtMost(100.0), "no task over 100 ms"),
        );
        Ok(())
    }

    /// The resident memory (KiB) of `steward-bench floor` before and while holding the idle
    /// streams.
    fn floor_streams(&self) -> anyhow::Result<(f64, f64)> {
        let (server, port) = self.bench_server("floor")?;
        let held = self.steward_bench_profiled(
            "floor",
            &[
                "idle",
                &format!("http://127.0.0.1:{port}"),
                path(&self.token_file),
                &self.options.idle_streams.to_string(),
                &server.child.id().to_string(),
                "5",
            ],
        )?;
        drop(server);
        Ok((number(&held, "rss_before_kib")?, number(&held, "rss_kib")?))
    }

    /// `steward-bench NAME PORT_FILE` (a server of its own: `floor`, `model`) running, and the
    /// port it listens on.
    fn bench_server(&self, name: &str) -> anyhow::Result<(Process, String)> {
        let port_file = self.work.join(format!("{name}.port"));
        let _ = std::fs::remove_file(&port_file);
        let child = Command::new(self.bin.join("steward-bench"))
            .args([name, path(&port_file)])
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .with_context(|| format!("start steward-bench {name}"))?;
        let server = Process {
            child,
            base: String::new(),
            ready: None,
        };
        let deadline = Instant::now() + Duration::from_secs(10);
        loop {
            if let Some(port) = std::fs::read_to_string(&port_file).ok().filter(|port| !port.is_empty()) {
                return Ok((server, port));
            }
            if Instant::now() > deadline {
                bail!("the {name} server did not start");
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Model deltas from the worker to a stream client, beside persisted events in the same run:
    /// the worker streams from `steward-bench model` (each piece stamped with its send time), so
    /// a delta's latency is its whole path: the worker reading the model, sealing and `NOTIFY`,
    /// the API opening and relaying it, the client reading it.
    fn model_deltas(&self, report: &mut Report) -> anyhow::Result<()> {
        let (model, port) = self.bench_server("model")?;
        let definitions = self.work.join("stream-agents.json");
        std::fs::write(
            &definitions,
            r#"[{"id": "default", "instructions": "Answer.", "model": {"provider": "openai", "model": "bench-stream"}}]"#,
        )?;
        let key = self.work.join("model-api-key");
        write_secret(&key, "bench-model-key-0123456789")?;
        let mut api = self.start_api_with(&[("AGENT_DEFINITIONS_FILE", path(&definitions).to_owned())])?;
        let mut worker = self.start_role(
            role("steward-worker"),
            &[
                ("OPENAI_BASE_URL", format!("http://127.0.0.1:{port}/v1")),
                ("OPENAI_API_KEY_FILE", path(&key).to_owned()),
            ],
        )?;
        let streams = self.options.streams.to_string();
        let events = self.steward_bench(&["events", &api.base, path(&self.token_file), &streams, "10"]);
        worker.stop();
        api.stop();
        drop(model);
        let events = events?;
        let (deltas, event_p99) = (number(&events, "deltas")?, number(&events, "p99_ms")?);
        if deltas < 1.0 {
            bail!("no stamped delta reached a stream");
        }
        let delta_p99 = number(&events, "delta_p99_ms")?;
        report.push(
            Row::new(
                format!("model delta (worker) → SSE client, p50 / p99 ({streams} live streams)"),
                format!("{:.2} / {delta_p99:.2} ms", number(&events, "delta_p50_ms")?),
            )
            .reference(format!(
                "persisted events in the same run: p99 {event_p99:.2} ms; {deltas} deltas"
            ))
            .goal(
                delta_p99 / event_p99.max(0.001),
                Goal::AtMost(1.0),
                "p99 no worse than a persisted event's",
            ),
        );
        Ok(())
    }

    /// A session of `count` events replayed from `Last-Event-ID: 0`, against `psql \copy` of the
    /// same rows.
    fn replay(&self, base: &str, report: &mut Report) -> anyhow::Result<()> {
        let count = self.options.replay_events;
        let session = self.psql(
            "steward_bench",
            "SELECT id FROM sessions WHERE last_event_seq = 0 ORDER BY created_at LIMIT 1",
        )?;
        if session.is_empty() {
            bail!("no empty session to fill");
        }
        self.psql(
            "steward_bench",
            &format!(
                "BEGIN;
                 INSERT INTO events (session_id, seq, run_id, kind, payload, created_at)
                 SELECT '{session}', n, NULL, 'user.message.created',
                        jsonb_build_object('run_id', gen_random_uuid(), 'message',
                            jsonb_build_object('text', 'replayed message ' || n, 'attachments', '[]'::jsonb)),
                        clock_timestamp()
                 FROM generate_series(1, {count}) AS n;
                 UPDATE sessions SET last_event_seq = {count} WHERE id = '{session}';
                 COMMIT;"
            ),
        )?;
        self.psql("steward_bench", "VACUUM ANALYZE events")?;
        let replay = self.steward_bench(&["replay", base, path(&self.token_file), &session, &count.to_string()])?;
        let seconds = number(&replay, "seconds")?;
        let started = Instant::now();
        self.psql(
            "steward_bench",
            &format!(
                "\\copy (SELECT session_id, seq, run_id, kind, payload, created_at FROM events \
                 WHERE session_id = '{session}' ORDER BY seq) TO '/dev/null'"
            ),
        )?;
        let copy = started.elapsed().as_secs_f64();
        let (rate, reference) = (count as f64 / seconds, count as f64 / copy);
        report.push(
            Row::new(
                format!("replay of {count} events from `Last-Event-ID: 0`"),
                format!("{rate:.0} events/s = {:.0}% of `\\copy`", 100.0 * rate / reference),
            )
            .reference(format!("`psql \\copy` of the same rows: {reference:.0} rows/s"))
            .goal(rate / reference, Goal::AtLeast(0.5), "≥ 50% of `\\copy`"),
        );
        Ok(())
    }

    /// The submit workload against the LangGraph API server (`langgraph-cli[inmem]`, in memory)
    /// with a one-node graph, installed into a temporary virtual environment.
    fn langgraph(&self, report: &mut Report) -> anyhow::Result<()> {
        let venv = self.work.join("langgraph-venv");
        let python = venv.join("bin/python");
        let quiet = |command: &mut Command, what: &str| -> anyhow::Result<()> {
            let output = command
                .stdin(Stdio::null())
                .output()
                .with_context(|| format!("run {what}"))?;
            if !output.status.success() {
                let text = String::from_utf8_lossy(&output.stderr);
                bail!("{what} failed: {}", text.lines().last().unwrap_or_default());
            }
            Ok(())
        };
        quiet(
            Command::new("python3").args(["-m", "venv"]).arg(&venv),
            "python3 -m venv",
        )?;
        quiet(
            Command::new(&python).args(["-m", "pip", "install", "--quiet", "langgraph-cli[inmem]"]),
            "pip install langgraph-cli[inmem]",
        )?;
        let project = self.work.join("langgraph-project");
        std::fs::create_dir_all(&project)?;
        std::fs::write(project.join("graph.py"), LANGGRAPH_GRAPH)?;
        std::fs::write(project.join("langgraph.json"), LANGGRAPH_CONFIG)?;
        let port = free_port()?;
        let mut server = Process {
            child: Command::new(venv.join("bin/langgraph"))
                .args([
                    "dev",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    &port.to_string(),
                    "--no-browser",
                    "--no-reload",
                ])
                .current_dir(&project)
                // No usage report, no version check, no tracing; warnings only, as the roles
                // here log (its per-run info lines halve its rate).
                .env("LANGGRAPH_CLI_NO_ANALYTICS", "1")
                .env("LANGGRAPH_NO_VERSION_CHECK", "true")
                .env("LANGSMITH_TRACING", "false")
                .env("LOG_LEVEL", "WARNING")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()
                .context("start langgraph dev")?,
            base: format!("http://127.0.0.1:{port}"),
            ready: None,
        };
        let deadline = Instant::now() + Duration::from_secs(120);
        while !http_ok(&format!("127.0.0.1:{port}"), "/ok") {
            if Instant::now() > deadline || server.child.try_wait()?.is_some() {
                bail!("the LangGraph server did not start");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        let runs = self.options.submits.min(2000).to_string();
        let measured = self.steward_bench(&[
            "langgraph",
            &server.base,
            "bench",
            &runs,
            &self.options.clients.to_string(),
        ]);
        server.stop();
        let rate = number(&measured?, "runs_per_second")?;
        match self.submit_rate.get() {
            Some(submits) => report.push(
                Row::new(
                    "message submits against the LangGraph API server",
                    format!("{:.1}× LangGraph", submits / rate),
                )
                .reference(format!("LangGraph in memory, `POST /threads/{{id}}/runs`: {rate:.0}/s"))
                .goal(submits / rate, Goal::AtLeast(10.0), "≥ 10×"),
            ),
            None => report.push(Row::new("LangGraph API server runs per second", format!("{rate:.0}/s"))),
        }
        Ok(())
    }

    /// Lateness of `schedules` schedules all due at one instant, fired by one `steward-schedule`.
    fn schedules(&self, report: &mut Report) -> anyhow::Result<()> {
        let count = self.options.schedules;
        // The due instant: a whole second far enough ahead for the role to be up.
        let due = self.psql(
            "steward_bench",
            "SELECT to_char(date_trunc('second', now()) + interval '6 seconds', 'YYYY-MM-DD\"T\"HH24:MI:SSOF')",
        )?;
        self.psql(
            "steward_bench",
            &format!(
                "INSERT INTO schedules (id, principal_id, title, instruction, agent_id, agent_version, policy_profile,
                     requested_scopes, max_steps, max_model_calls, max_tool_calls, max_cost_micros, run_timeout_seconds,
                     cadence_kind, local_time, timezone, misfire_grace_seconds, max_consecutive_failures, state, next_fire_at)
                 SELECT gen_random_uuid(), 'owner', 'bench ' || n, 'benchmark instruction', v.agent_id, v.version, 'default',
                     '{{}}', 8, 8, 8, 1000000, 300,
                     'DAILY', to_char('{due}'::timestamptz AT TIME ZONE 'UTC', 'HH24:MI:SS'), 'UTC',
                     86400, 3, 'active', '{due}'::timestamptz
                 FROM generate_series(1, {count}) AS n
                 CROSS JOIN (SELECT agent_id, version FROM agent_versions WHERE agent_id = 'default'
                             ORDER BY first_registered_at DESC LIMIT 1) AS v"
            ),
        )?;
        let _profile = self.profile("schedules");
        let mut scheduler = self.start_role(role("steward-schedule"), &[])?;
        let deadline = Instant::now() + Duration::from_secs(600);
        let fired = loop {
            std::thread::sleep(Duration::from_millis(500));
            let fired: usize = self
                .psql(
                    "steward_bench",
                    "SELECT count(*) FROM schedule_occurrences o JOIN schedules s ON s.id = o.schedule_id
                     WHERE s.title LIKE 'bench %'",
                )?
                .parse()?;
            if fired >= count || Instant::now() > deadline || scheduler.child.try_wait()?.is_some() {
                break fired;
            }
        };
        scheduler.stop();
        if fired < count {
            bail!("only {fired} of {count} schedules fired");
        }
        let lateness = self.psql(
            "steward_bench",
            "WITH late AS (
                 SELECT extract(epoch FROM r.created_at - o.scheduled_for) * 1000 AS ms
                 FROM schedule_occurrences o JOIN schedules s ON s.id = o.schedule_id
                 JOIN runs r ON r.occurrence_id = o.id WHERE s.title LIKE 'bench %')
             SELECT count(*), percentile_cont(0.5) WITHIN GROUP (ORDER BY ms),
                    percentile_cont(0.99) WITHIN GROUP (ORDER BY ms) FROM late",
        )?;
        let figures: Vec<f64> = lateness.split('|').filter_map(|part| part.parse().ok()).collect();
        let [runs, p50, p99] = figures[..] else {
            bail!("unreadable lateness: {lateness}");
        };
        report.push(
            Row::new(
                format!("lateness of {count} schedules due at one instant, p50 / p99"),
                format!("{:.0} / {:.0} ms", p50, p99),
            )
            .reference(format!("{runs:.0} runs created"))
            .goal(p99 / 1000.0, Goal::AtMost(1.0), "p99 ≤ 1 s"),
        );
        Ok(())
    }

    /// Idle resident memory and start-to-READY time of one role.
    /// The priority inbox's first page over 50,000 projected threads, beside the session
    /// index's first page on the same API.
    fn email_inbox(&self, report: &mut Report) -> anyhow::Result<()> {
        self.psql(
            "steward_bench",
            "INSERT INTO email_accounts (account_id, address, history_id, coverage_from, updated_at)
                 VALUES ('inbox-bench', 'owner@bench.example', '1', now() - interval '30 days', now());
             INSERT INTO email_threads (account_id, provider_thread_id, subject, correspondents, latest_at,
                 message_count, labels, importance, reply_need, gist, classifier, rule, assessed_at)
             SELECT 'inbox-bench', 't' || g, 'Subject ' || g,
                 jsonb_build_array(jsonb_build_object('name', 'Person ' || (g % 500), 'address', 'p' || (g % 500) || '@example.com')),
                 now() - make_interval(mins => g), 1 + g % 4,
                 CASE WHEN g % 10 < 8 THEN ARRAY['INBOX'] ELSE ARRAY[]::text[] END,
                 CASE WHEN g % 5 = 0 THEN 'important' ELSE 'other' END,
                 CASE WHEN g % 15 = 0 THEN 'needs_reply' WHEN g % 5 = 0 AND g % 3 = 1 THEN 'for_your_attention' END,
                 'The gist of conversation ' || g, 'jev-1.13.0', 'known_correspondent', now()
             FROM generate_series(1, 50000) g;
             ANALYZE email_threads;",
        )?;
        let mut api = self.start_api_with(&[
            ("AGENT_EMAIL_MODE_ENABLED", "1".to_owned()),
            ("AUTH_SCOPES", "sessions.read,sessions.write,email.read".to_owned()),
        ])?;
        let measured = self.steward_bench(&["inbox", &api.base, path(&self.token_file), "2000"]);
        api.stop();
        let inbox = measured?;
        let p99 = number(&inbox, "p99_ms")?;
        report.push(
            Row::new(
                "Email inbox first page (5 of 50,000 projected threads), p50 / p99",
                format!("{:.2} / {p99:.2} ms", number(&inbox, "p50_ms")?),
            )
            .reference(format!(
                "session index first page of 5: {:.2} / {:.2} ms",
                number(&inbox, "reference_p50_ms")?,
                number(&inbox, "reference_p99_ms")?
            ))
            .goal(p99, Goal::AtMost(20.0), "p99 ≤ 20 ms"),
        );
        Ok(())
    }

    /// An incremental update of 100 new messages against the local provider stand-in, beside
    /// the same provider reads alone.
    fn email_refresh(&self, report: &mut Report) -> anyhow::Result<()> {
        let login = pgcluster::with_user(&self.database_url, "steward_async_worker");
        let refresh = self.steward_bench(&["refresh", &login])?;
        let seconds = number(&refresh, "update_ms")? / 1000.0;
        report.push(
            Row::new(
                "Email incremental refresh of 100 new messages (local stand-in, Gmail's quota pacing)",
                format!("{seconds:.2} s"),
            )
            .reference(format!(
                "the history and 100 raw reads alone, paced alike: {:.2} s",
                number(&refresh, "reference_ms")? / 1000.0
            ))
            .goal(seconds, Goal::AtMost(2.0), "≤ 2 s"),
        );
        Ok(())
    }

    fn role(&self, role: &Role, report: &mut Report) -> anyhow::Result<()> {
        let started = Instant::now();
        let mut process = self.start_role(role, &[])?;
        let ready = process.ready.unwrap_or(started.elapsed());
        std::thread::sleep(Duration::from_secs(3));
        let rss = rss_kib(process.child.id()).context("read its resident memory")? as f64 / 1024.0;
        process.stop();
        let limit = 15.0;
        report.push(
            Row::new(
                format!("`{}` resident memory, idle", role.binary),
                format!("{rss:.1} MiB"),
            )
            .goal(rss, Goal::AtMost(limit), format!("≤ {limit:.0} MiB")),
        );
        let ms = ready.as_secs_f64() * 1000.0;
        report.push(
            Row::new(format!("`{}` start to READY", role.binary), format!("{ms:.0} ms")).goal(
                ms,
                Goal::AtMost(100.0),
                "≤ 100 ms",
            ),
        );
        Ok(())
    }

    /// Starts a role with its own login and the fixtures it needs, and waits for its `READY=1`.
    fn start_role(&self, role: &Role, extra: &[(&str, String)]) -> anyhow::Result<Process> {
        let socket_path = self.work.join(format!("{}.notify", role.binary));
        let _ = std::fs::remove_file(&socket_path);
        let socket = UnixDatagram::bind(&socket_path).context("bind the notify socket")?;
        socket.set_read_timeout(Some(Duration::from_secs(30)))?;
        let mut env: Vec<(&str, String)> = vec![
            ("DATABASE_URL", pgcluster::with_user(&self.database_url, role.login)),
            (crate::postgres::ALLOW_ROOT.0, crate::postgres::ALLOW_ROOT.1.to_owned()),
            ("LOG_LEVEL", "warn".to_owned()),
            ("NOTIFY_SOCKET", path(&socket_path).to_owned()),
        ];
        let mut base = String::new();
        match role.binary {
            "steward-api" => {
                let port = free_port()?;
                base = format!("http://127.0.0.1:{port}");
                env.extend([
                    ("API_TOKEN_FILE", path(&self.token_file).to_owned()),
                    ("API_LISTEN_ADDR", format!("127.0.0.1:{port}")),
                    ("AUTH_SCOPES", "sessions.read,sessions.write".to_owned()),
                    ("DATABASE_MAX_CONNECTIONS", self.options.clients.to_string()),
                ]);
            }
            "steward-notify" => {
                let key = self.work.join("apns.p8");
                let pair = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).context("generate a key")?;
                write_secret(&key, &pair.serialize_pem())?;
                env.extend([
                    ("AGENT_NOTIFICATION_API_ENABLED", "1".to_owned()),
                    ("AGENT_NOTIFICATION_DISPATCH_ENABLED", "1".to_owned()),
                    ("APNS_KEY_FILE", path(&key).to_owned()),
                    ("APNS_TEAM_ID", "TEAM123456".to_owned()),
                    ("APNS_KEY_ID", "KEY1234567".to_owned()),
                    ("APNS_TOPIC", "dev.steward.client".to_owned()),
                ]);
            }
            _ => {}
        }
        env.extend(extra.iter().cloned());
        let started = Instant::now();
        let child = Command::new(self.bin.join(role.binary))
            .env_clear()
            .envs(env)
            .stdin(Stdio::null())
            .spawn()
            .with_context(|| format!("start {}", role.binary))?;
        let mut process = Process {
            child,
            base,
            ready: None,
        };
        let mut message = [0_u8; 1024];
        loop {
            let length = match socket.recv(&mut message) {
                Ok(length) => length,
                Err(error) => {
                    process.stop();
                    return Err(error).with_context(|| format!("{} sent no READY=1", role.binary));
                }
            };
            if String::from_utf8_lossy(&message[..length])
                .lines()
                .any(|line| line == "READY=1")
            {
                process.ready = Some(started.elapsed());
                break;
            }
        }
        let _ = std::fs::remove_file(&socket_path);
        Ok(process)
    }

    /// The API, answering `GET /health/ready`.
    fn start_api(&self) -> anyhow::Result<Process> {
        self.start_api_with(&[])
    }

    /// [`Bench::start_api`] with `extra` in its environment.
    fn start_api_with(&self, extra: &[(&str, String)]) -> anyhow::Result<Process> {
        let mut api = self.start_role(role("steward-api"), extra)?;
        let deadline = Instant::now() + Duration::from_secs(30);
        let address = api.base.trim_start_matches("http://").to_owned();
        while !health_ready(&address) {
            if Instant::now() > deadline || api.child.try_wait()?.is_some() {
                api.stop();
                bail!("steward-api did not become ready");
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Ok(api)
    }

    /// Runs one `steward-bench` measurement and parses its JSON answer.
    /// Where `--perf` wants the profile `name` (its directory made), if it asked for profiles.
    fn profile_data(&self, name: &str) -> Option<PathBuf> {
        let dir = self.options.perf.as_ref()?;
        if let Err(error) = std::fs::create_dir_all(dir) {
            eprintln!("xtask: no profile of {name}: {error}");
            return None;
        }
        Some(dir.join(format!("{name}.data")))
    }

    /// A system-wide profile (`perf record -a -g`) until the returned guard is dropped, when
    /// `--perf` asked for one.
    fn profile(&self, name: &str) -> Option<Profile> {
        let data = self.profile_data(name)?;
        match Command::new("perf")
            .args(["record", "-a", "-g", "-F", "299", "-q", "-o"])
            .arg(&data)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
        {
            Ok(child) => Some(Profile { child, data }),
            Err(error) => {
                eprintln!("xtask: no profile of {name}: perf: {error}");
                None
            }
        }
    }

    fn steward_bench(&self, args: &[&str]) -> anyhow::Result<Value> {
        self.steward_bench_profiled(args[0], args)
    }

    /// [`Bench::steward_bench`], its profile (with `--perf`) named `profile`.
    fn steward_bench_profiled(&self, profile: &str, args: &[&str]) -> anyhow::Result<Value> {
        let mut command = Command::new(self.bin.join("steward-bench"));
        // The submit run profiles its throughput phase itself; the others are profiled whole.
        let (_profile, own_profile) = if args[0] == "submits" {
            (None, self.profile_data(profile))
        } else {
            (self.profile(profile), None)
        };
        if let Some(data) = &own_profile {
            command.env("STEWARD_BENCH_PERF", data);
        }
        let output = command
            .args(args)
            .stderr(Stdio::inherit())
            .output()
            .context("run steward-bench")?;
        if let Some(data) = &own_profile {
            summarize(data);
        }
        if !output.status.success() {
            bail!("steward-bench {} failed ({})", args[0], output.status);
        }
        serde_json::from_slice(&output.stdout).context("steward-bench printed no JSON")
    }

    /// Runs SQL as the cluster's superuser; the unaligned, tuples-only output, trimmed.
    fn psql(&self, database: &str, sql: &str) -> anyhow::Result<String> {
        let output = Command::new(client_tool(&self.binaries, "psql"))
            .args([
                "-X",
                "-q",
                "-A",
                "-t",
                "-v",
                "ON_ERROR_STOP=1",
                "-d",
                &self.cluster.url(database),
                "-c",
                sql,
            ])
            .output()
            .context("run psql")?;
        if !output.status.success() {
            bail!("psql failed: {}", String::from_utf8_lossy(&output.stderr).trim());
        }
        Ok(String::from_utf8_lossy(&output.stdout).trim().to_owned())
    }

    /// One-row insert transactions per second that pgbench reaches on the cluster with
    /// `clients` connections for 10 seconds (`-M prepared`, no vacuum), in a database of its own.
    fn commit_ceiling(&self, clients: &str) -> anyhow::Result<f64> {
        self.psql("postgres", "CREATE DATABASE commit_ceiling")?;
        self.psql(
            "commit_ceiling",
            "CREATE TABLE one_row (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v integer NOT NULL)",
        )?;
        let script = self.work.join("ceiling.sql");
        std::fs::write(&script, "INSERT INTO one_row (v) VALUES (1);\n").context("write the pgbench script")?;
        let output = Command::new(client_tool(&self.binaries, "pgbench"))
            .args(["-n", "-M", "prepared", "-T", "10", "-c", clients, "-j", "2", "-f"])
            .arg(&script)
            .arg(self.cluster.url("commit_ceiling"))
            .output()
            .context("run pgbench")?;
        if !output.status.success() {
            bail!("pgbench failed: {}", String::from_utf8_lossy(&output.stderr).trim());
        }
        String::from_utf8_lossy(&output.stdout)
            .lines()
            .find_map(|line| line.strip_prefix("tps = "))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|tps| tps.parse().ok())
            .context("pgbench printed no tps")
    }
}

/// A running `perf record`; stopped on drop, leaving `<name>.data` and a summary by process
/// (`<name>.txt`) beside it.
struct Profile {
    child: Child,
    data: PathBuf,
}

impl Drop for Profile {
    fn drop(&mut self) {
        let _ = kill(Pid::from_raw(self.child.id() as i32), Signal::SIGINT);
        let _ = self.child.wait();
        summarize(&self.data);
    }
}

/// Writes the profile's summary by process, then by symbol, beside it (`<name>.txt`).
fn summarize(data: &Path) {
    let mut summary = String::new();
    for sort in ["comm", "comm,dso,sym"] {
        if let Ok(output) = Command::new("perf")
            .args([
                "report",
                "--stdio",
                "--no-children",
                "-g",
                "none",
                "--percent-limit",
                "0.7",
                "--sort",
                sort,
                "-i",
            ])
            .arg(data)
            .stderr(Stdio::null())
            .output()
        {
            summary.push_str(&String::from_utf8_lossy(&output.stdout));
        }
    }
    let _ = std::fs::write(data.with_extension("txt"), summary);
}

/// A daemon role and the database login it runs as.
struct Role {
    binary: &'static str,
    login: &'static str,
}

const ROLES: &[Role] = &[
    Role {
        binary: "steward-api",
        login: "steward_api",
    },
    Role {
        binary: "steward-worker",
        login: "steward_worker",
    },
    Role {
        binary: "steward-schedule",
        login: "steward_schedule",
    },
    Role {
        binary: "steward-notify",
        login: "steward_notify",
    },
    // steward-call-ingress requires calling, which this release refuses at start: it is
    // measured again when calling lands.
];

fn role(binary: &str) -> &'static Role {
    ROLES.iter().find(|role| role.binary == binary).expect("a listed role")
}

/// A started role, stopped (SIGTERM, then waited for) when dropped.
struct Process {
    child: Child,
    /// The base URL of a role that serves HTTP.
    base: String,
    ready: Option<Duration>,
}

impl Process {
    fn stop(&mut self) {
        if matches!(self.child.try_wait(), Ok(None)) {
            let _ = kill(Pid::from_raw(self.child.id() as i32), Signal::SIGTERM);
        }
        let _ = self.child.wait();
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.stop();
    }
}

fn number(value: &Value, field: &str) -> anyhow::Result<f64> {
    value[field]
        .as_f64()
        .with_context(|| format!("steward-bench gave no `{field}`"))
}

fn path(path: &Path) -> &str {
    path.to_str().unwrap_or_default()
}

fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// A one-node LangGraph graph: the node answers without a model.
const LANGGRAPH_GRAPH: &str = "\
from typing import TypedDict
from langgraph.graph import StateGraph, START, END

class State(TypedDict):
    messages: list

def answer(state: State) -> dict:
    return {\"messages\": state.get(\"messages\", []) + [{\"role\": \"assistant\", \"content\": \"ok\"}]}

builder = StateGraph(State)
builder.add_node(\"answer\", answer)
builder.add_edge(START, \"answer\")
builder.add_edge(\"answer\", END)
graph = builder.compile()
";

const LANGGRAPH_CONFIG: &str = r#"{"dependencies": ["."], "graphs": {"bench": "./graph.py:graph"}}"#;

/// Whether `GET /health/ready` answers 200 at `address`.
fn health_ready(address: &str) -> bool {
    http_ok(address, "/health/ready")
}

/// Whether `GET path` answers 200 at `address`.
fn http_ok(address: &str, path: &str) -> bool {
    use std::io::Read as _;
    let Ok(mut stream) = std::net::TcpStream::connect(address) else {
        return false;
    };
    let _ = stream.set_read_timeout(Some(Duration::from_secs(2)));
    if stream
        .write_all(format!("GET {path} HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n").as_bytes())
        .is_err()
    {
        return false;
    }
    let mut head = [0_u8; 12];
    stream.read_exact(&mut head).is_ok() && &head[9..12] == b"200"
}

/// Writes an owner-only secret file.
fn write_secret(file: &Path, contents: &str) -> anyhow::Result<()> {
    let _ = std::fs::remove_file(file);
    let mut handle = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(file)
        .with_context(|| format!("create {}", file.display()))?;
    writeln!(handle, "{contents}")?;
    Ok(())
}

/// Ten thousand streams need as many descriptors in the API and in the load generator.
fn raise_file_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((_, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
}

/// The machine the figures come from.
fn machine(bench: &Bench) -> String {
    let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let model = cpuinfo
        .lines()
        .find_map(|line| line.strip_prefix("model name"))
        .map(|rest| rest.trim_start_matches([' ', '\t', ':']).to_owned())
        .unwrap_or_else(|| "unknown CPU".to_owned());
    let cores = std::thread::available_parallelism().map_or(0, usize::from);
    let memory = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|text| {
            text.lines()
                .find_map(|line| line.strip_prefix("MemTotal:"))?
                .trim()
                .strip_suffix("kB")?
                .trim()
                .parse::<f64>()
                .ok()
        })
        .map_or_else(
            || "unknown".to_owned(),
            |kib| format!("{:.1} GiB", kib / 1024.0 / 1024.0),
        );
    let postgres = bench
        .psql("postgres", "SHOW server_version")
        .unwrap_or_else(|_| "unknown".to_owned());
    format!(
        "Machine: {cores} cores ({model}), {memory} memory, PostgreSQL {postgres} (fsync on), release build, loopback."
    )
}

/// A PostgreSQL client program of the same installation as the server binaries: beside them,
/// beside what they link to (a directory of symlinks), or else on `PATH`.
fn client_tool(binaries: &pgcluster::Binaries, name: &str) -> PathBuf {
    let beside = binaries.dir().join(name);
    if beside.is_file() {
        return beside;
    }
    std::fs::canonicalize(binaries.dir().join("postgres"))
        .ok()
        .and_then(|server| Some(server.parent()?.join(name)))
        .filter(|tool| tool.is_file())
        .unwrap_or_else(|| name.into())
}

/// Resident set size of a process, from /proc.
fn rss_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status.lines().find_map(|line| {
        line.strip_prefix("VmRSS:")?
            .trim()
            .strip_suffix("kB")?
            .trim()
            .parse()
            .ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_figure_reads_as_the_share_of_its_target_reached() {
        let reached = |figure, goal| Row::new("m", "v").goal(figure, goal, "t").reached();
        assert_eq!(reached(0.25, Goal::AtLeast(0.5)), Some(50.0));
        assert_eq!(reached(10.0, Goal::AtMost(5.0)), Some(50.0));
        assert_eq!(reached(2.5, Goal::AtMost(5.0)), Some(200.0));
        assert_eq!(Row::new("m", "v").reached(), None);
    }

    #[test]
    fn options_refuse_unknown_arguments_and_values_that_are_not_positive() {
        let parse = |args: &[&str]| Options::parse(args.iter().map(|arg| (*arg).to_owned()).collect());
        let options = parse(&["--clients", "8", "--no-langgraph"]).expect("valid");
        assert_eq!((options.clients, options.langgraph, options.submits), (8, false, 4000));
        for bad in [
            &["--clients", "0"][..],
            &["--clients"],
            &["--streams", "many"],
            &["--fast"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?} was accepted");
        }
    }
}

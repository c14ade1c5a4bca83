//! What every measurement uses: `steward-bench`, `psql`, profiles, and the machine's figures.

use super::*;

impl Bench {
    /// Runs one `steward-bench` measurement and parses its JSON answer.
    /// Where `--perf` wants the profile `name` (its directory made), if it asked for profiles.
    pub(super) fn profile_data(&self, name: &str) -> Option<PathBuf> {
        let dir = self.options.perf.as_ref()?;
        if let Err(error) = std::fs::create_dir_all(dir) {
            eprintln!("xtask: no profile of {name}: {error}");
            return None;
        }
        Some(dir.join(format!("{name}.data")))
    }

    /// A system-wide profile (`perf record -a -g`) until the returned guard is dropped, when
    /// `--perf` asked for one.
    pub(super) fn profile(&self, name: &str) -> Option<Profile> {
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

    pub(super) fn steward_bench(&self, args: &[&str]) -> anyhow::Result<Value> {
        self.steward_bench_profiled(args[0], args)
    }

    /// [`Bench::steward_bench`], its profile (with `--perf`) named `profile`.
    pub(super) fn steward_bench_profiled(&self, profile: &str, args: &[&str]) -> anyhow::Result<Value> {
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
    pub(super) fn psql(&self, database: &str, sql: &str) -> anyhow::Result<String> {
        crate::postgres::psql(&self.binaries, &self.cluster.url(database), sql)
    }

    /// Fills the oldest session that has no events with `count` events, the `n`th (from 1) of
    /// kind `kind` and payload `payload` (SQL expressions of `n`); returns the session's id.
    pub(super) fn fill_empty_session(&self, count: usize, kind: &str, payload: &str) -> anyhow::Result<String> {
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
                 SELECT '{session}', n, NULL, {kind}, {payload}, clock_timestamp()
                 FROM generate_series(1, {count}) AS n;
                 UPDATE sessions SET last_event_seq = {count} WHERE id = '{session}';
                 COMMIT;"
            ),
        )?;
        Ok(session)
    }
}

/// A running `perf record`; stopped on drop, leaving `<name>.data` and a summary by process
/// (`<name>.txt`) beside it.
pub(super) struct Profile {
    pub(super) child: Child,
    pub(super) data: PathBuf,
}

impl Drop for Profile {
    fn drop(&mut self) {
        let _ = kill(Pid::from_raw(self.child.id() as i32), Signal::SIGINT);
        let _ = self.child.wait();
        summarize(&self.data);
    }
}

/// Writes the profile's summary by process, then by symbol, beside it (`<name>.txt`).
pub(super) fn summarize(data: &Path) {
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

pub(super) fn number(value: &Value, field: &str) -> anyhow::Result<f64> {
    value[field]
        .as_f64()
        .with_context(|| format!("steward-bench gave no `{field}`"))
}

pub(super) fn path(path: &Path) -> &str {
    path.to_str().unwrap_or_default()
}

pub(super) fn free_port() -> anyhow::Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port())
}

/// Writes an owner-only secret file.
pub(super) fn write_secret(file: &Path, contents: &str) -> anyhow::Result<()> {
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
pub(super) fn raise_file_limit() {
    use nix::sys::resource::{Resource, getrlimit, setrlimit};
    if let Ok((_, hard)) = getrlimit(Resource::RLIMIT_NOFILE) {
        let _ = setrlimit(Resource::RLIMIT_NOFILE, hard, hard);
    }
}

/// The machine the figures come from.
pub(super) fn machine(bench: &Bench) -> String {
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

pub(super) use crate::postgres::client_tool;

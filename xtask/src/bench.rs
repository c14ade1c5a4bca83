//! `cargo xtask bench`: release builds of the API against a durable temporary cluster (fsync
//! on, so the commit rate is PostgreSQL's real one), measured by `steward-bench` on loopback.

use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::process::{Command, ExitCode};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;
use pgcluster::{Cluster, Durability};

pub fn run(args: Vec<String>) -> anyhow::Result<ExitCode> {
    let root = crate::workspace_root();
    let status = crate::cargo()
        .args([
            "build",
            "--release",
            "--locked",
            "-p",
            "steward-api",
            "-p",
            "steward-migrate",
            "-p",
            "steward-bench",
        ])
        .status()
        .context("build release binaries")?;
    if !status.success() {
        bail!("the release build failed");
    }
    let bin = root.join("target/release");
    let binaries = crate::postgres::ensure_binaries()?;
    let cluster = Cluster::temporary_with(&binaries, Durability::Durable).context("start the benchmark cluster")?;
    let database_url = cluster.url("steward_bench");
    crate::postgres::prepare_database(&bin, &database_url)?;

    let work = std::env::temp_dir().join(format!("steward-bench-{}", std::process::id()));
    std::fs::create_dir_all(&work).context("create the bench directory")?;
    let token_file = work.join("api-token");
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .mode(0o600)
        .open(&token_file)?;
    writeln!(file, "bench-token-{}-0123456789abcdef0123456789", std::process::id())?;
    drop(file);

    let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
    let mut api = Command::new(bin.join("steward-api"))
        .env("DATABASE_URL", pgcluster::with_user(&database_url, "steward_api"))
        .env(crate::postgres::ALLOW_ROOT.0, crate::postgres::ALLOW_ROOT.1)
        .env("DATABASE_MAX_CONNECTIONS", "32")
        .env("API_TOKEN_FILE", &token_file)
        .env("API_LISTEN_ADDR", format!("127.0.0.1:{port}"))
        .env("AUTH_SCOPES", "sessions.read,sessions.write")
        .env("LOG_LEVEL", "warn")
        .spawn()
        .context("start steward-api")?;
    let base = format!("http://127.0.0.1:{port}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        if Instant::now() > deadline || api.try_wait()?.is_some() {
            bail!("steward-api did not start");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    std::thread::sleep(Duration::from_millis(500));
    let idle_rss = rss_kib(api.id());

    let outcome = Command::new(bin.join("steward-bench"))
        .arg(&base)
        .arg(&token_file)
        .args(&args)
        .stderr(std::process::Stdio::inherit())
        .output();
    let busy_rss = rss_kib(api.id());
    let _ = kill(Pid::from_raw(api.id() as i32), Signal::SIGTERM);
    let _ = api.wait();
    let outcome = outcome.context("run steward-bench")?;
    let table = String::from_utf8_lossy(&outcome.stdout).into_owned();
    print!("{table}");
    // The reference: PostgreSQL's own one-row commit rate on the same cluster, at the same
    // concurrency, measured right after (the machine is shared; only the ratio means much).
    let clients = args.get(2).map_or("32", String::as_str);
    let ceiling = commit_ceiling(&binaries, &cluster, clients);
    drop(cluster);
    let _ = std::fs::remove_dir_all(&work);
    match (ceiling, submits_per_second(&table)) {
        (Ok(ceiling), Some(submits)) => {
            println!(
                "| PostgreSQL one-row insert commits per second (pgbench, {clients} clients, same cluster) | {ceiling:.0} |"
            );
            println!(
                "| submits per second ÷ that commit ceiling | {:.0}% |",
                100.0 * submits / ceiling
            );
        }
        (Err(error), _) => println!("| PostgreSQL commit ceiling | not measured: {error:#} |"),
        (_, None) => println!("| PostgreSQL commit ceiling | not compared: no submit rate was printed |"),
    }
    if let (Some(idle), Some(busy)) = (idle_rss, busy_rss) {
        println!(
            "| steward-api resident memory, idle after start | {:.1} MiB |",
            idle as f64 / 1024.0
        );
        println!(
            "| steward-api resident memory, after the load | {:.1} MiB |",
            busy as f64 / 1024.0
        );
    }
    Ok(if outcome.status.success() {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The submit rate `steward-bench` printed.
fn submits_per_second(table: &str) -> Option<f64> {
    table
        .lines()
        .find(|line| line.starts_with("| message submits per second"))?
        .trim_end_matches('|')
        .rsplit('|')
        .next()?
        .trim()
        .parse()
        .ok()
}

/// One-row insert transactions per second that pgbench reaches on `cluster` with `clients`
/// connections for 10 seconds (`-M prepared`, no vacuum), in a database of its own.
fn commit_ceiling(binaries: &pgcluster::Binaries, cluster: &Cluster, clients: &str) -> anyhow::Result<f64> {
    let psql = |sql: &str, database: &str| -> anyhow::Result<()> {
        let status = Command::new(client_tool(binaries, "psql"))
            .args([
                "-X",
                "-q",
                "-v",
                "ON_ERROR_STOP=1",
                "-d",
                &cluster.url(database),
                "-c",
                sql,
            ])
            .status()
            .context("run psql")?;
        if !status.success() {
            bail!("psql failed: {sql}");
        }
        Ok(())
    };
    psql("CREATE DATABASE commit_ceiling", "postgres")?;
    psql(
        "CREATE TABLE one_row (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, v integer NOT NULL)",
        "commit_ceiling",
    )?;
    let script = std::env::temp_dir().join(format!("steward-ceiling-{}.sql", std::process::id()));
    std::fs::write(&script, "INSERT INTO one_row (v) VALUES (1);\n").context("write the pgbench script")?;
    let output = Command::new(client_tool(binaries, "pgbench"))
        .args(["-n", "-M", "prepared", "-T", "10", "-c", clients, "-j", "2", "-f"])
        .arg(&script)
        .arg(cluster.url("commit_ceiling"))
        .output()
        .context("run pgbench")?;
    let _ = std::fs::remove_file(&script);
    let text = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        bail!("pgbench failed: {}", String::from_utf8_lossy(&output.stderr).trim());
    }
    text.lines()
        .find_map(|line| line.strip_prefix("tps = "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|tps| tps.parse().ok())
        .context("pgbench printed no tps")
}

/// A PostgreSQL client program of the same installation as the server binaries: beside them,
/// beside what they link to (a directory of symlinks), or else on `PATH`.
fn client_tool(binaries: &pgcluster::Binaries, name: &str) -> std::path::PathBuf {
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

//! `cargo xtask soak [--minutes N]`: the whole stack (API, worker, scheduler, async worker,
//! notifier) on a private cluster with the demo mailbox, the offline model and a push provider
//! stand-in (`steward-bench apns`), under a day-shaped load
//! (`steward-bench soak`) for N minutes (10 by default), while a chaos loop kills each role
//! with SIGKILL at random moments and restarts it, and restarts PostgreSQL once. Then, once
//! everything has settled, it checks what must hold and prints the figures: every approved side
//! effect happened exactly once, every session's events are contiguous, every run ended, no
//! operation is stuck, no notification was queued twice or lost, and each role's memory is back
//! near its idle figure. A 10-minute run (or longer) writes its report to `docs/soak.md`; any
//! run writes it to `target/soak/report.md`. Exits non-zero when a check fails.

use std::fs;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, ExitCode, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use pgcluster::{Binaries, Cluster, Durability};
use serde_json::Value;

mod apns;
mod checks;
mod report;
mod roles;

use self::apns::Apns;
use self::checks::{CHECKS, SETTLED, count, psql};
use self::report::Figures;
use self::roles::{Dice, Reaped, Role, restart_exited, rss_kib};

const USAGE: &str = "usage: cargo xtask soak [--minutes N]";

/// How long, after the load has ended, everything may take to settle.
const SETTLE: Duration = Duration::from_secs(120);

fn parse(args: Vec<String>) -> anyhow::Result<u64> {
    match args.as_slice() {
        [] => Ok(10),
        [flag, value] if flag == "--minutes" => value
            .parse::<u64>()
            .ok()
            .filter(|minutes| *minutes > 0)
            .with_context(|| format!("--minutes must be a whole number of minutes, not `{value}` ({USAGE})")),
        _ => bail!("{USAGE}"),
    }
}

pub fn run(args: Vec<String>) -> anyhow::Result<ExitCode> {
    let minutes = parse(args)?;
    Ok(if soak_for(minutes)? {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    })
}

/// The short pass at the end of the whole suite (`cargo xtask test`): two minutes.
pub fn short_pass() -> anyhow::Result<()> {
    if !soak_for(2)? {
        bail!("a check failed");
    }
    Ok(())
}

/// Runs the soak for `minutes`, prints and writes its report; whether every check held.
fn soak_for(minutes: u64) -> anyhow::Result<bool> {
    let bin = crate::dev::build_roles_and(&["steward-bench", "steward-notify"])?;
    let root = crate::workspace_root();
    let dir = root.join("target/soak");
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("logs")).context("create target/soak")?;
    let binaries = crate::postgres::ensure_binaries()?;
    // Temporary (removed even if this process dies) but durable: it is restarted mid-run.
    let mut cluster = Cluster::temporary_with(&binaries, Durability::Durable).context("start the soak cluster")?;
    let admin = cluster.url("steward");
    let setup = (|| {
        crate::postgres::prepare_database(&bin, &admin, &[])?;
        let token_file = dir.join("api-token");
        crate::dev::ensure_token(&token_file)?;
        let port = std::net::TcpListener::bind("127.0.0.1:0")?.local_addr()?.port();
        let demo = crate::demo_mail::DemoMail::start(&bin, &dir.join("demo-mail"))?;
        let apns = Apns::start(&bin, &dir.join("apns"), &dir.join("logs/apns.log"));
        let apns = match apns {
            Ok(apns) => apns,
            Err(error) => {
                let mut demo = demo;
                demo.stop();
                return Err(error);
            }
        };
        anyhow::Ok((token_file, port, demo, apns))
    })();
    let (token_file, port, mut demo, mut apns) = setup?;
    let outcome = soak(
        &SoakSetup {
            minutes,
            bin: &bin,
            dir: &dir,
            binaries: &binaries,
            admin: &admin,
            token_file: &token_file,
            listen: ([127, 0, 0, 1], port).into(),
            demo: &demo,
            apns: &apns,
        },
        &mut cluster,
    );
    demo.stop();
    crate::stop(&mut apns.child);
    drop(cluster);
    let figures = outcome?;
    let report = figures.markdown();
    println!("\n{report}");
    fs::write(dir.join("report.md"), &report).context("write target/soak/report.md")?;
    if minutes >= 10 {
        fs::write(root.join("docs/soak.md"), &report).context("write docs/soak.md")?;
    }
    if !figures.passed() {
        eprintln!("xtask: soak: a check failed (target/soak/report.md; the roles' logs are in target/soak/logs)");
    }
    Ok(figures.passed())
}

struct SoakSetup<'a> {
    minutes: u64,
    bin: &'a Path,
    dir: &'a Path,
    binaries: &'a Binaries,
    admin: &'a str,
    token_file: &'a Path,
    listen: SocketAddr,
    demo: &'a crate::demo_mail::DemoMail,
    apns: &'a Apns,
}

fn soak(setup: &SoakSetup<'_>, cluster: &mut Cluster) -> anyhow::Result<Figures> {
    let login = |name: &str| pgcluster::with_user(setup.admin, name);
    let (allow_root, allow) = crate::postgres::ALLOW_ROOT;
    let mut common: Vec<(String, String)> = setup.demo.environment();
    common.push((allow_root.to_owned(), allow.to_owned()));
    common.push(("LOG_LEVEL".to_owned(), "warn".to_owned()));
    // Push notifications on, for every role alike (the flags must agree across roles).
    common.push(("AGENT_NOTIFICATION_API_ENABLED".to_owned(), "1".to_owned()));
    common.push(("AGENT_NOTIFICATION_DISPATCH_ENABLED".to_owned(), "1".to_owned()));
    let role = |name: &'static str, login_name: &str, extra: Vec<(String, String)>| {
        let mut env = common.clone();
        env.push(("DATABASE_URL".to_owned(), login(login_name)));
        env.extend(extra);
        Role {
            name,
            binary: setup.bin.join(name),
            env,
            log: setup.dir.join(format!("logs/{name}.log")),
            child: None,
            kills: 0,
            exits: 0,
            idle_kib: 0,
        }
    };
    let mut roles = vec![
        role(
            "steward-api",
            "steward_api",
            vec![
                ("API_TOKEN_FILE".to_owned(), setup.token_file.display().to_string()),
                ("API_LISTEN_ADDR".to_owned(), setup.listen.to_string()),
                ("AUTH_SCOPES".to_owned(), crate::dev::template_scopes()?),
            ],
        ),
        role("steward-worker", "steward_worker", Vec::new()),
        role("steward-schedule", "steward_schedule", Vec::new()),
        role(
            "steward-async-worker",
            "steward_async_worker",
            vec![("EMAIL_REFRESH_EVERY_SECONDS".to_owned(), "60".to_owned())],
        ),
        role(
            "steward-notify",
            "steward_notify",
            [
                ("APNS_TEAM_ID", "TEAM123456"),
                ("APNS_KEY_ID", "KEY1234567"),
                ("APNS_TOPIC", "dev.steward.client"),
                ("APNS_KEY_FILE", &setup.apns.key_file.display().to_string()),
                ("APNS_SANDBOX_URL", &setup.apns.url),
                ("APNS_PRODUCTION_URL", &setup.apns.url),
                ("APNS_CA_FILE", &setup.apns.dir.join("ca.pem").display().to_string()),
                ("NOTIFY_LEASE_SECONDS", "10"),
            ]
            .map(|(name, value)| (name.to_owned(), value.to_owned()))
            .to_vec(),
        ),
    ];
    let result = drive(setup, cluster, &mut roles);
    for role in &mut roles {
        role.stop();
    }
    result
}

fn api_ready(setup: &SoakSetup<'_>, roles: &mut [Role]) -> anyhow::Result<()> {
    let api = roles[0].child.as_mut().context("the API runs")?;
    crate::dev::wait_ready(setup.listen, api)
}

fn drive(setup: &SoakSetup<'_>, cluster: &mut Cluster, roles: &mut [Role]) -> anyhow::Result<Figures> {
    for role in roles.iter_mut() {
        role.spawn()?;
    }
    api_ready(setup, roles)?;
    std::thread::sleep(Duration::from_secs(5));
    for role in roles.iter_mut() {
        role.idle_kib = role.pid().map_or(0, rss_kib);
    }

    let length = Duration::from_secs(setup.minutes * 60);
    let load_log = fs::File::create(setup.dir.join("logs/load.log"))?;
    let mut load = Reaped(
        Command::new(setup.bin.join("steward-bench"))
            .args([
                "soak",
                &format!("http://{}", setup.listen),
                &setup.token_file.display().to_string(),
                &length.as_secs().to_string(),
                &setup.dir.join("demo-mail").display().to_string(),
            ])
            .stdout(Stdio::piped())
            .stderr(load_log)
            .spawn()
            .context("start the load")?,
    );

    // Chaos for the first 80% of the day: one kill at a time, each role in turn (in an order
    // shuffled anew each round), and PostgreSQL restarted once, halfway.
    let started = Instant::now();
    let chaos = length.mul_f64(0.8);
    let mut dice = Dice::new();
    let kills_wanted = (2 * roles.len() as u64).max(setup.minutes * 3);
    let interval = chaos.div_f64(kills_wanted as f64 + 1.0).max(Duration::from_secs(8));
    let mut next_kill = started + interval;
    let mut order: Vec<usize> = Vec::new();
    let mut database_restarts = 0;
    while started.elapsed() < chaos {
        std::thread::sleep(Duration::from_millis(250));
        restart_exited(roles)?;
        if database_restarts == 0 && started.elapsed() >= length / 2 {
            eprintln!("xtask: soak: restarting PostgreSQL");
            cluster.stop().context("stop PostgreSQL")?;
            std::thread::sleep(Duration::from_secs(3));
            cluster.restart(setup.binaries).context("restart PostgreSQL")?;
            database_restarts += 1;
        }
        if Instant::now() >= next_kill {
            if order.is_empty() {
                order = (0..roles.len()).collect();
                for i in (1..order.len()).rev() {
                    order.swap(i, dice.below(i as u64 + 1) as usize);
                }
            }
            let index = order.pop().unwrap_or(0);
            let role = &mut roles[index];
            eprintln!("xtask: soak: SIGKILL {}", role.name);
            role.kill9();
            std::thread::sleep(Duration::from_millis(500 + dice.below(2500)));
            role.spawn()?;
            if index == 0 {
                api_ready(setup, roles)?;
            }
            next_kill = Instant::now() + interval.mul_f64(0.5 + dice.below(1000) as f64 / 1000.0);
        }
    }

    // The load ends with its day, after finishing the flows it has begun.
    let deadline = started + length + SETTLE * 2;
    let status = loop {
        restart_exited(roles)?;
        if let Some(status) = load.0.try_wait()? {
            break status;
        }
        if Instant::now() > deadline {
            bail!("the load did not finish (target/soak/logs/load.log)");
        }
        std::thread::sleep(Duration::from_millis(500));
    };
    let mut output = String::new();
    if let Some(mut stdout) = load.0.stdout.take() {
        std::io::Read::read_to_string(&mut stdout, &mut output)?;
    }
    if !status.success() {
        bail!("the load failed ({status}); see target/soak/logs/load.log");
    }
    let load: Value = serde_json::from_str(output.trim()).context("read the load's figures")?;

    // Everything settles: every run ends, every operation settles.
    let url = setup.admin;
    let settle_deadline = Instant::now() + SETTLE;
    while Instant::now() < settle_deadline {
        restart_exited(roles)?;
        let mut open = 0;
        for sql in SETTLED {
            open += count(setup.binaries, url, sql)?;
        }
        if open == 0 {
            break;
        }
        std::thread::sleep(Duration::from_secs(1));
    }
    // Memory after a quiet moment.
    std::thread::sleep(Duration::from_secs(5));
    restart_exited(roles)?;

    let mut rows = Vec::new();
    for (what, sql) in CHECKS {
        let found = count(setup.binaries, url, sql)?;
        rows.push(((*what).to_owned(), found.to_string(), found == 0));
    }
    let approved: i64 = count(
        setup.binaries,
        url,
        "SELECT count(*) FROM approvals WHERE tool = 'notes.add' AND status = 'APPROVED'",
    )?;
    rows.push((
        "approved `notes.add` calls: the load's count, the service's".to_owned(),
        format!("{} / {approved}", load["approvals_approved"]),
        load["approvals_approved"].as_i64() == Some(approved),
    ));
    // Sent: the call succeeded, or its outcome was unknown and reconciliation found the message.
    let sent: i64 = count(
        setup.binaries,
        url,
        "SELECT count(*) FROM email_drafts d JOIN tool_invocations i ON i.run_id = d.send_run
           WHERE i.state = 'succeeded'
              OR EXISTS (SELECT 1 FROM mail_reconciliations m WHERE m.invocation_id = i.id AND m.state = 'found')",
    )?;
    rows.push((
        "Review & Sends: approved; sent, by the service's record and in the provider's Sent".to_owned(),
        format!("{}; {sent}, {}", load["sends_approved"], load["provider_sent"]),
        load["provider_sent"].as_i64() == Some(sent) && sent > 0,
    ));
    let unknown = count(
        setup.binaries,
        url,
        "SELECT count(*) FROM tool_invocations WHERE state = 'outcome_unknown'",
    )?;
    let worker_kills = roles
        .iter()
        .find(|role| role.name == "steward-worker")
        .map_or(0, |role| role.kills);
    rows.push((
        "tool calls of unknown outcome (only one in flight at each kill of the worker may be; never repeated)"
            .to_owned(),
        format!("{unknown} (worker killed {worker_kills} times)"),
        unknown <= i64::from(worker_kills),
    ));
    let (created, fired): (i64, i64) = (
        count(
            setup.binaries,
            url,
            "SELECT count(*) FROM schedules WHERE title LIKE 'Soak %'",
        )?,
        count(
            setup.binaries,
            url,
            "SELECT count(DISTINCT o.schedule_id) FROM schedule_occurrences o JOIN schedules s ON s.id = o.schedule_id
               JOIN runs r ON r.id = o.run_id WHERE s.title LIKE 'Soak %' AND r.state = 'completed'",
        )?,
    );
    rows.push((
        "schedules: made, fired and completed".to_owned(),
        format!("{created}, {fired}"),
        fired > 0,
    ));
    let delivered = psql(
        setup.binaries,
        url,
        "SELECT id FROM notification_outbox WHERE delivered_at IS NOT NULL",
    )?;
    let delivered: Vec<&str> = delivered.lines().filter(|line| !line.is_empty()).collect();
    let (alerts, signed) = setup.apns.alerts()?;
    let never_pushed = delivered.iter().filter(|id| !alerts.contains_key(**id)).count();
    let repeated = alerts.values().filter(|pushes| **pushes > 1).count();
    let notifier_kills = roles
        .iter()
        .find(|role| role.name == "steward-notify")
        .map_or(0, |role| role.kills);
    rows.push((
        "notifications delivered, pushed; recorded delivered but never pushed".to_owned(),
        format!("{}, {}; {never_pushed}", delivered.len(), alerts.len()),
        never_pushed == 0 && !delivered.is_empty() && signed,
    ));
    rows.push((
        "notifications pushed twice (only one in flight at each kill of the notifier may be; the device shows it once, by its collapse id)".to_owned(),
        format!("{repeated} (notifier killed {notifier_kills} times)"),
        repeated as u32 <= notifier_kills,
    ));
    let listed = |name: &str| load[name].as_array().map_or(0, Vec::len);
    rows.push((
        "load flows abandoned, client failures".to_owned(),
        format!("{}, {}", listed("flows_abandoned"), listed("client_failures")),
        listed("flows_abandoned") == 0 && listed("client_failures") == 0,
    ));
    let exits: u32 = roles.iter().map(|role| role.exits).sum();
    rows.push((
        "roles that exited on their own".to_owned(),
        exits.to_string(),
        exits == 0,
    ));
    let mut memory = Vec::new();
    for role in roles.iter() {
        let end = role.pid().map_or(0, rss_kib);
        memory.push((role.name.to_owned(), role.kills, role.exits, role.idle_kib, end));
    }
    // A role not running (RSS 0) counts as far from idle.
    let far = memory
        .iter()
        .filter(|(_, _, _, idle, end)| *end == 0 || *end > (*idle * 2).max(*idle + 32 * 1024))
        .count();
    rows.push((
        "roles whose memory is not back near idle (at most twice it, or 32 MiB above)".to_owned(),
        far.to_string(),
        far == 0,
    ));
    let killed_each = roles.iter().all(|role| role.kills > 0);
    rows.push((
        "roles killed at least once".to_owned(),
        format!(
            "{} of {}",
            roles.iter().filter(|role| role.kills > 0).count(),
            roles.len()
        ),
        killed_each,
    ));
    for (name, detail) in [
        ("flows_abandoned", "abandoned"),
        ("client_failures", "failed"),
        ("runs_not_completed", "not completed"),
    ] {
        for line in load[name].as_array().into_iter().flatten() {
            eprintln!("xtask: soak: {detail}: {line}");
        }
    }
    Ok(Figures {
        minutes: setup.minutes,
        load,
        rows,
        roles: memory,
        database_restarts,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minutes_default_to_ten_and_refuse_what_is_not_a_positive_number() {
        assert_eq!(parse(Vec::new()).expect("default"), 10);
        assert_eq!(parse(vec!["--minutes".into(), "2".into()]).expect("two"), 2);
        for bad in [
            vec!["--minutes".into(), "0".into()],
            vec!["--minutes".into(), "x".into()],
            vec!["--hours".into(), "1".into()],
        ] {
            assert!(parse(bad).is_err());
        }
    }

    #[test]
    fn the_dice_stay_below_their_bound() {
        let mut dice = Dice::new();
        assert!((0..1000).all(|_| dice.below(7) < 7));
    }
}

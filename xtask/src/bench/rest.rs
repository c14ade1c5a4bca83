//! The whole stack at rest: every role of `cargo xtask dev --demo-mail` and PostgreSQL's
//! processes, just started and again after a day-shaped load.

use super::*;

/// The load: conversations, each sending a message about once a second for this long, with the
/// stack's worker answering (the offline model), and schedules firing once.
const CONVERSATIONS: usize = 100;
const CONVERSATION_SECONDS: usize = 10;
const SCHEDULES: usize = 10;
/// How long the stack is left alone before its memory is read.
const SETTLE: Duration = Duration::from_secs(10);

impl Bench {
    /// Resident memory of every role (its `VmRSS`) and of PostgreSQL's processes (their
    /// proportional share, `Pss`, so shared buffers count once) after 100 conversations, 10
    /// schedules fired and the demo mailbox projected, beside the same stack just started.
    pub(super) fn at_rest(&self, report: &mut Report) -> anyhow::Result<()> {
        const DATABASE: &str = "steward_stack";
        let dir = self.work.join("stack");
        let mut demo = crate::demo_mail::DemoMail::start(&self.bin, &dir.join("demo-mail"))?;
        let mut flags = demo.environment();
        flags.push(("AGENT_MEMORY_API_ENABLED".to_owned(), "1".to_owned()));
        flags.extend(crate::dev::web_push_environment(&self.bin, &dir.join("vapid-key"))?);
        let flags: Vec<(&str, &str)> = flags
            .iter()
            .map(|(name, value)| (name.as_str(), value.as_str()))
            .collect();
        let listen: std::net::SocketAddr = ([127, 0, 0, 1], free_port()?).into();
        let admin = self.cluster.url(DATABASE);
        let scopes = crate::dev::template_scopes()?;
        let mut stack = crate::dev::Stack::start(&self.bin, &admin, &self.token_file, listen, &scopes, "warn", &flags)?;
        let measured = (|| {
            stack.start_notify(&self.bin, &admin, "warn", &flags, &dir.join("vapid-key"))?;
            // Started: the demo mailbox's first projection done, nothing else asked.
            self.projected(DATABASE)?;
            std::thread::sleep(SETTLE);
            let started = self.stack_memory(&stack)?;
            let base = format!("http://{listen}");
            self.steward_bench(&[
                "events",
                &base,
                path(&self.token_file),
                &CONVERSATIONS.to_string(),
                &CONVERSATION_SECONDS.to_string(),
            ])?;
            self.fire_schedules(DATABASE, SCHEDULES)?;
            std::thread::sleep(SETTLE);
            stack.check()?;
            Ok::<_, anyhow::Error>((started, self.stack_memory(&stack)?))
        })();
        stack.stop();
        demo.stop();
        let (started, loaded) = measured?;
        report.push(
            Row::new(
                format!(
                    "whole stack at rest after {CONVERSATIONS} conversations, {SCHEDULES} schedules and the demo mailbox"
                ),
                loaded.text(),
            )
            .reference(format!("the same stack just started: {}", started.text())),
        );
        Ok(())
    }

    /// Waits until the demo mailbox's threads are projected and their count holds for a second.
    fn projected(&self, database: &str) -> anyhow::Result<()> {
        let deadline = Instant::now() + Duration::from_secs(120);
        let mut last = String::new();
        loop {
            let threads = self.psql(database, "SELECT count(*) FROM email_threads")?;
            if threads != "0" && threads == last {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("the demo mailbox was not projected ({threads} threads)");
            }
            last = threads;
            std::thread::sleep(Duration::from_secs(1));
        }
    }

    /// Makes `count` schedules due two seconds from now and waits until each one's run ended.
    fn fire_schedules(&self, database: &str, count: usize) -> anyhow::Result<()> {
        self.insert_due_schedules(
            database,
            count,
            ("daily", "Summarize my day"),
            "date_trunc('second', now()) + interval '2 seconds'",
            600,
        )?;
        let deadline = Instant::now() + Duration::from_secs(120);
        loop {
            let ended: usize = self
                .psql(
                    database,
                    "SELECT count(*) FROM runs WHERE occurrence_id IS NOT NULL AND finished_at IS NOT NULL",
                )?
                .parse()?;
            if ended >= count {
                return Ok(());
            }
            if Instant::now() > deadline {
                bail!("only {ended} of {count} scheduled runs ended");
            }
            std::thread::sleep(Duration::from_millis(500));
        }
    }

    /// Every role's resident memory and PostgreSQL's processes' proportional share.
    fn stack_memory(&self, stack: &crate::dev::Stack) -> anyhow::Result<StackMemory> {
        let roles = stack
            .processes()
            .into_iter()
            .map(|(name, pid)| Ok((name, proc_kib(pid, "status", "VmRSS:")?)))
            .collect::<anyhow::Result<Vec<_>>>()?;
        let postmaster = self.cluster.pid().context("the cluster's server is not running")?;
        let mut postgres = vec![postmaster];
        postgres.extend(children(postmaster));
        let kib: u64 = postgres
            .iter()
            .filter_map(|pid| proc_kib(*pid, "smaps_rollup", "Pss:").ok())
            .sum();
        Ok(StackMemory {
            roles,
            postgres: (postgres.len(), kib),
        })
    }
}

/// Memory of the stack's processes, in KiB.
struct StackMemory {
    roles: Vec<(&'static str, u64)>,
    /// PostgreSQL's process count and their summed `Pss`.
    postgres: (usize, u64),
}

impl StackMemory {
    fn text(&self) -> String {
        let mib = |kib: u64| kib as f64 / 1024.0;
        let total = self.roles.iter().map(|(_, kib)| kib).sum::<u64>() + self.postgres.1;
        let roles: Vec<String> = self
            .roles
            .iter()
            .map(|(name, kib)| format!("{} {:.1}", name.trim_start_matches("steward-"), mib(*kib)))
            .collect();
        format!(
            "{:.0} MiB: {} MiB; PostgreSQL {:.1} MiB in {} processes",
            mib(total),
            roles.join(", "),
            mib(self.postgres.1),
            self.postgres.0
        )
    }
}

/// The figure in kB on the line starting `field` of `/proc/PID/file`.
fn proc_kib(pid: u32, file: &str, field: &str) -> anyhow::Result<u64> {
    let text =
        std::fs::read_to_string(format!("/proc/{pid}/{file}")).with_context(|| format!("read /proc/{pid}/{file}"))?;
    text.lines()
        .find_map(|line| line.strip_prefix(field)?.trim().strip_suffix("kB")?.trim().parse().ok())
        .with_context(|| format!("/proc/{pid}/{file} has no {field}"))
}

/// The processes whose parent is `parent`.
fn children(parent: u32) -> Vec<u32> {
    std::fs::read_to_string(format!("/proc/{parent}/task/{parent}/children"))
        .unwrap_or_default()
        .split_whitespace()
        .filter_map(|pid| pid.parse().ok())
        .collect()
}

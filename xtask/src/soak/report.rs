//! The soak's report: the checks' figures, each role's kills and memory, and the load's counts,
//! as Markdown (`target/soak/report.md`, and `docs/soak.md` for a run of 10 minutes or more).

use std::fmt::Write as _;

use serde_json::Value;

/// What the run measured, for the report.
pub(super) struct Figures {
    pub(super) minutes: u64,
    pub(super) load: Value,
    pub(super) rows: Vec<(String, String, bool)>,
    pub(super) roles: Vec<(String, u32, u32, u64, u64)>,
    pub(super) database_restarts: u32,
}

impl Figures {
    pub(super) fn passed(&self) -> bool {
        self.rows.iter().all(|(_, _, ok)| *ok)
    }

    pub(super) fn markdown(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "# Soak\n\nThe figures of the latest `cargo xtask soak --minutes {}` on this repository's \
             reference machine (2 cores, debug builds): the whole stack under a day-shaped load while every role is \
             killed with SIGKILL and restarted and PostgreSQL is restarted once. How it works: \
             [reliability](reliability.md#a-soak-with-faults).\n",
            self.minutes
        );
        let _ = writeln!(out, "| Check | Figure | Holds |\n|---|---|---|");
        for (what, figure, ok) in &self.rows {
            let _ = writeln!(out, "| {what} | {figure} | {} |", if *ok { "yes" } else { "**no**" });
        }
        let _ = writeln!(
            out,
            "\n| Role | Killed | Exited on its own | Idle RSS (MiB) | RSS after the run (MiB) |\n|---|---|---|---|---|"
        );
        for (name, kills, exits, idle, end) in &self.roles {
            let _ = writeln!(
                out,
                "| {name} | {kills} | {exits} | {:.1} | {:.1} |",
                *idle as f64 / 1024.0,
                *end as f64 / 1024.0
            );
        }
        let load = &self.load;
        let _ = writeln!(
            out,
            "\nThe load: {} sessions, {} conversation runs ({} completed), {} approvals approved and {} \
             denied, {} questions answered, {} schedules, {} refreshes, {} archives, {} Review & Sends \
             approved ({} sent; {} in the provider's Sent), {} requests retried through the outages; \
             PostgreSQL restarted {} time(s).",
            load["sessions"],
            load["runs"],
            load["runs_completed"],
            load["approvals_approved"],
            load["approvals_denied"],
            load["questions_answered"],
            load["schedules"],
            load["refreshes"],
            load["archives"],
            load["sends_approved"],
            load["sends_sent"],
            load["provider_sent"],
            load["retries"],
            self.database_restarts,
        );
        out
    }
}

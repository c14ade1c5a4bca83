//! The soak's processes: each role, restartable and counted; the load, reaped on any early
//! return; and the chaos loop's dice.

use std::fs;
use std::path::PathBuf;
use std::process::{Child, Command};

use anyhow::Context;
use nix::sys::signal::{Signal, kill};
use nix::unistd::Pid;

/// One role's process, restartable.
pub(super) struct Role {
    pub(super) name: &'static str,
    pub(super) binary: PathBuf,
    pub(super) env: Vec<(String, String)>,
    pub(super) log: PathBuf,
    pub(super) child: Option<Child>,
    pub(super) kills: u32,
    pub(super) exits: u32,
    pub(super) idle_kib: u64,
}

impl Role {
    pub(super) fn spawn(&mut self) -> anyhow::Result<()> {
        let log = fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.log)
            .with_context(|| format!("open {}", self.log.display()))?;
        let child = Command::new(&self.binary)
            .envs(self.env.iter().map(|(name, value)| (name, value)))
            .stdout(log.try_clone()?)
            .stderr(log)
            .spawn()
            .with_context(|| format!("start {}", self.name))?;
        self.child = Some(child);
        Ok(())
    }

    pub(super) fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    pub(super) fn kill9(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
            self.kills += 1;
        }
    }

    /// Whether the process has exited on its own (counted, and restarted).
    pub(super) fn exited(&mut self) -> anyhow::Result<bool> {
        let Some(child) = self.child.as_mut() else {
            return Ok(false);
        };
        if child.try_wait()?.is_none() {
            return Ok(false);
        }
        self.exits += 1;
        self.child = None;
        self.spawn()?;
        Ok(true)
    }

    pub(super) fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            crate::stop(&mut child);
        }
    }
}

/// A small xorshift generator for the chaos loop's timing and choices (xtask takes no `rand`
/// for this one use).
pub(super) struct Dice(u64);

impl Dice {
    pub(super) fn new() -> Dice {
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0x9e37_79b9, |now| now.as_nanos() as u64);
        Dice(seed | 1)
    }

    pub(super) fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound.max(1)
    }
}

/// Resident memory of a process, from /proc.
pub(super) fn rss_kib(pid: u32) -> u64 {
    fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status.lines().find_map(|line| {
                line.strip_prefix("VmRSS:")?
                    .trim()
                    .strip_suffix("kB")?
                    .trim()
                    .parse()
                    .ok()
            })
        })
        .unwrap_or(0)
}

/// A child process killed and waited for when dropped (the load, should the soak end early).
pub(super) struct Reaped(pub(super) Child);

impl Drop for Reaped {
    fn drop(&mut self) {
        if matches!(self.0.try_wait(), Ok(None)) {
            let _ = kill(Pid::from_raw(self.0.id() as i32), Signal::SIGKILL);
        }
        let _ = self.0.wait();
    }
}

/// Restarts (and counts) every role that exited on its own.
pub(super) fn restart_exited(roles: &mut [Role]) -> anyhow::Result<()> {
    for role in roles.iter_mut() {
        if role.exited()? {
            eprintln!("xtask: soak: {} exited on its own; restarted", role.name);
        }
    }
    Ok(())
}

//! Process hardening, applied by every role's `main` while the process is still single-threaded
//! (capabilities and `no_new_privs` are per-thread attributes that new threads inherit, so the
//! async runtime's threads must be started afterwards).

use nix::sys::stat::{Mode, umask};
use nix::unistd::{getegid, geteuid, getgid, getuid};

/// The umask every role runs with: no write for the group, nothing for others.
pub const UMASK: u32 = 0o027;

/// The variable that lets a role run as root, for development stacks only.
pub const ALLOW_ROOT_VARIABLE: &str = "STEWARD_DEV_ALLOW_ROOT";

#[derive(Debug, thiserror::Error)]
pub enum HardeningError {
    #[error("refusing to run as root; run as the role's own user (development stacks may set {ALLOW_ROOT_VARIABLE}=1)")]
    Root,
    #[error("{action}: {source}")]
    Syscall {
        action: &'static str,
        source: nix::errno::Errno,
    },
    #[error("{action}: {source}")]
    Capabilities {
        action: &'static str,
        source: caps::errors::CapsError,
    },
    #[error("capabilities remain after dropping them all: {0}")]
    CapabilitiesRemain(String),
}

/// The running user's effective uid (owner checks of files this process creates or reads).
pub fn effective_uid() -> u32 {
    geteuid().as_raw()
}

/// Whether the process runs with any root identity (real, effective, or their groups).
pub fn is_root() -> bool {
    getuid().is_root() || geteuid().is_root() || getgid().as_raw() == 0 || getegid().as_raw() == 0
}

/// The process's (soft) limit on open file descriptors; `u64::MAX` when unlimited.
pub fn open_files() -> u64 {
    rustix::process::getrlimit(rustix::process::Resource::Nofile)
        .current
        .unwrap_or(u64::MAX)
}

/// Raises the soft limit on open file descriptors to the hard one (the unit's `LimitNOFILE=`):
/// a server's connections are file descriptors, and the soft default (often 1,024) is what
/// would run out first. Needs no privilege; a refusal leaves the limit as it was.
fn raise_open_files() {
    use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
    let limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        let raised = Rlimit {
            current: limit.maximum,
            maximum: limit.maximum,
        };
        let _ = setrlimit(Resource::Nofile, raised);
    }
}

/// Refuses root unless `allow_root`; raises the open-files limit to its hard limit; sets the
/// umask, `no_new_privs` and not-dumpable; and drops every capability from the effective,
/// permitted, inheritable, ambient and (when we may) bounding sets. Call before any thread is
/// spawned.
pub fn harden(allow_root: bool) -> Result<(), HardeningError> {
    if is_root() && !allow_root {
        return Err(HardeningError::Root);
    }
    raise_open_files();
    umask(Mode::from_bits_truncate(UMASK));
    nix::sys::prctl::set_no_new_privs().map_err(|source| HardeningError::Syscall {
        action: "set no_new_privs",
        source,
    })?;
    nix::sys::prctl::set_dumpable(false).map_err(|source| HardeningError::Syscall {
        action: "make the process not dumpable",
        source,
    })?;
    drop_capabilities()
}

fn drop_capabilities() -> Result<(), HardeningError> {
    use caps::{CapSet, Capability};
    let failed = |action: &'static str| move |source| HardeningError::Capabilities { action, source };
    // The bounding set can only shrink while CAP_SETPCAP is effective, so it goes first.
    if caps::has_cap(None, CapSet::Effective, Capability::CAP_SETPCAP).map_err(failed("read capabilities"))? {
        for capability in caps::read(None, CapSet::Bounding).map_err(failed("read the bounding set"))? {
            caps::drop(None, CapSet::Bounding, capability).map_err(failed("drop from the bounding set"))?;
        }
    }
    // Only sets that hold something are written: under systemd the unit's empty bounding set has
    // emptied them already, and `capset` itself may be filtered out (`~@privileged`).
    for (set, action) in [
        (CapSet::Ambient, "clear the ambient set"),
        (CapSet::Inheritable, "clear the inheritable set"),
        (CapSet::Effective, "clear the effective set"),
        (CapSet::Permitted, "clear the permitted set"),
    ] {
        if !caps::read(None, set).map_err(failed("read capabilities"))?.is_empty() {
            caps::clear(None, set).map_err(failed(action))?;
        }
    }
    let remaining: Vec<String> = [
        CapSet::Effective,
        CapSet::Permitted,
        CapSet::Inheritable,
        CapSet::Ambient,
    ]
    .into_iter()
    .flat_map(|set| caps::read(None, set).unwrap_or_default())
    .map(|capability| capability.to_string())
    .collect();
    if remaining.is_empty() {
        Ok(())
    } else {
        Err(HardeningError::CapabilitiesRemain(remaining.join(", ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CHILD: &str = "HARDENING_TEST_CHILD";

    /// Hardening changes the whole process, so it runs in a child: this test binary re-executed
    /// with only `hardens_the_calling_process_child` selected.
    #[test]
    fn hardens_the_calling_process() {
        let exe = std::env::current_exe().expect("test binary");
        let output = std::process::Command::new(exe)
            .args([
                "--exact",
                "process::tests::hardens_the_calling_process_child",
                "--nocapture",
            ])
            .env(CHILD, "1")
            .output()
            .expect("run the child");
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(
            output.status.success(),
            "child failed: {stdout}{}",
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(stdout.contains("hardened: ok"), "the child ran its checks: {stdout}");
    }

    #[test]
    fn hardens_the_calling_process_child() {
        if std::env::var_os(CHILD).is_none() {
            return; // Only meaningful in the child started by the test above.
        }
        // A low soft limit on open files, as a login shell or a container may give.
        use rustix::process::{Resource, Rlimit, getrlimit, setrlimit};
        let hard = getrlimit(Resource::Nofile).maximum;
        let low = Rlimit {
            current: Some(hard.map_or(256, |hard| hard.min(256))),
            maximum: hard,
        };
        setrlimit(Resource::Nofile, low).expect("lower the soft limit");
        harden(true).expect("harden");
        assert_eq!(open_files(), hard.unwrap_or(u64::MAX), "raised from soft to hard");
        assert!(nix::sys::prctl::get_no_new_privs().expect("read no_new_privs"));
        assert!(!nix::sys::prctl::get_dumpable().expect("read dumpable"));
        let previous = umask(Mode::from_bits_truncate(UMASK));
        assert_eq!(previous.bits(), UMASK);
        for set in [caps::CapSet::Effective, caps::CapSet::Permitted, caps::CapSet::Ambient] {
            assert!(
                caps::read(None, set).expect("read capabilities").is_empty(),
                "{set:?} is empty"
            );
        }
        if is_root() {
            assert!(caps::read(None, caps::CapSet::Bounding).expect("bounding").is_empty());
        }
        println!("hardened: ok");
    }
}

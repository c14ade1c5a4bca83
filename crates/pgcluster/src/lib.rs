//! Private PostgreSQL clusters started from the machine's own binaries, for the dev stack and the
//! test suite.
//!
//! PostgreSQL refuses to run as root, so when we are root the cluster runs as the `postgres` OS
//! user, with its data and socket in a directory that user owns. Clusters listen only on a Unix
//! socket. A temporary cluster is removed when dropped, and a detached reaper removes it when the
//! owning process dies without dropping it (a test binary's statics are never dropped).

use std::fs::{self, File};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use nix::sys::signal::{Signal, kill};
use nix::unistd::{Gid, Pid, Uid, User, chown};

const PORT: u16 = 5432;
const START_TIMEOUT: Duration = Duration::from_secs(60);

#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    #[error("PostgreSQL server binaries (initdb, postgres) were not found on PATH or under /usr/lib/postgresql/*/bin")]
    BinariesMissing,
    #[error("running as root, but there is no `postgres` OS user to run PostgreSQL as")]
    NoPostgresUser,
    #[error("{action}: {source}")]
    Io { action: String, source: std::io::Error },
    #[error("{action} failed: {detail}")]
    Command { action: String, detail: String },
    #[error("PostgreSQL did not become ready within {0:?}; log tail:\n{1}")]
    NotReady(Duration, String),
}

fn io(action: impl Into<String>) -> impl FnOnce(std::io::Error) -> ClusterError {
    let action = action.into();
    move |source| ClusterError::Io { action, source }
}

/// The directory holding `initdb` and `postgres`.
#[derive(Clone, Debug)]
pub struct Binaries {
    dir: PathBuf,
}

impl Binaries {
    /// Finds the server binaries on `PATH`, else in the newest `/usr/lib/postgresql/<major>/bin`.
    pub fn locate() -> Result<Binaries, ClusterError> {
        let has_both = |dir: &Path| dir.join("initdb").is_file() && dir.join("postgres").is_file();
        if let Some(path) = std::env::var_os("PATH") {
            for dir in std::env::split_paths(&path) {
                if has_both(&dir) {
                    return Ok(Binaries { dir });
                }
            }
        }
        let mut versions: Vec<(u32, PathBuf)> = fs::read_dir("/usr/lib/postgresql")
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|entry| {
                let major = entry.file_name().to_str()?.parse::<u32>().ok()?;
                let bin = entry.path().join("bin");
                has_both(&bin).then_some((major, bin))
            })
            .collect();
        versions.sort();
        versions
            .pop()
            .map(|(_, dir)| Binaries { dir })
            .ok_or(ClusterError::BinariesMissing)
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

/// The OS identity PostgreSQL runs as: ourselves, or `postgres` when we are root.
#[derive(Clone, Copy, Debug)]
struct Identity {
    switch_to: Option<(Uid, Gid)>,
}

impl Identity {
    fn current() -> Result<Identity, ClusterError> {
        if !Uid::effective().is_root() {
            return Ok(Identity { switch_to: None });
        }
        let user = User::from_name("postgres")
            .map_err(|errno| ClusterError::Io {
                action: "look up the postgres user".into(),
                source: errno.into(),
            })?
            .ok_or(ClusterError::NoPostgresUser)?;
        Ok(Identity {
            switch_to: Some((user.uid, user.gid)),
        })
    }

    fn command(&self, program: &Path, working_dir: &Path) -> Command {
        let mut command = Command::new(program);
        command
            .env_clear()
            .env("PATH", "/usr/local/bin:/usr/bin:/bin")
            .env("LC_ALL", "C")
            .current_dir(working_dir)
            .stdin(Stdio::null());
        if let Some((uid, gid)) = self.switch_to {
            use std::os::unix::process::CommandExt;
            command.uid(uid.as_raw()).gid(gid.as_raw());
        }
        command
    }

    /// Creates `dir` (and parents) owned by the cluster's identity with mode 0700.
    fn make_private_dir(&self, dir: &Path) -> Result<(), ClusterError> {
        fs::create_dir_all(dir).map_err(io(format!("create {}", dir.display())))?;
        self.hand_over(dir, 0o700)
    }

    /// Gives `dir` to the cluster's identity. When that is `postgres` (we are root), the
    /// directory's group becomes ours with `mode`: our processes reach the socket through group
    /// permissions, because the roles drop every capability (root included) at startup and
    /// could not otherwise traverse a directory that `postgres` owns.
    fn hand_over(&self, dir: &Path, mode: u32) -> Result<(), ClusterError> {
        fs::set_permissions(dir, fs::Permissions::from_mode(mode)).map_err(io(format!("chmod {}", dir.display())))?;
        if let Some((uid, gid)) = self.switch_to {
            let group = if mode & 0o070 == 0 { gid } else { nix::unistd::getegid() };
            chown(dir, Some(uid), Some(group)).map_err(|errno| ClusterError::Io {
                action: format!("chown {}", dir.display()),
                source: errno.into(),
            })?;
        }
        Ok(())
    }
}

/// Durability trade-off of a cluster.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// fsync on: the dev cluster keeps its data across crashes.
    Durable,
    /// fsync off: a throwaway test cluster, several times faster.
    Throwaway,
}

/// A running PostgreSQL cluster.
#[derive(Debug)]
pub struct Cluster {
    child: Option<Child>,
    root: PathBuf,
    socket_dir: PathBuf,
    temporary: bool,
    durability: Durability,
}

impl Cluster {
    /// Starts a throwaway cluster in a fresh temporary directory, removed on drop or, if this
    /// process dies first, by a detached reaper.
    pub fn temporary(binaries: &Binaries) -> Result<Cluster, ClusterError> {
        Cluster::temporary_with(binaries, Durability::Throwaway)
    }

    /// A temporary cluster with the given durability (benchmarks measure with fsync on).
    pub fn temporary_with(binaries: &Binaries, durability: Durability) -> Result<Cluster, ClusterError> {
        let identity = Identity::current()?;
        let root = fresh_temp_dir()?;
        // The root must be traversable by the postgres user and by us (through its group).
        identity.hand_over(&root, 0o750)?;
        let mut cluster = match Cluster::start(binaries, identity, &root, durability) {
            Ok(cluster) => cluster,
            Err(error) => {
                let _ = fs::remove_dir_all(&root);
                return Err(error);
            }
        };
        cluster.temporary = true;
        cluster.spawn_reaper()?;
        Ok(cluster)
    }

    /// Starts (initialising on first use) a durable cluster under `root`, kept across runs.
    pub fn persistent(binaries: &Binaries, root: &Path) -> Result<Cluster, ClusterError> {
        let identity = Identity::current()?;
        fs::create_dir_all(root).map_err(io(format!("create {}", root.display())))?;
        let root = root.canonicalize().map_err(io(format!("resolve {}", root.display())))?;
        Cluster::start(binaries, identity, &root, Durability::Durable)
    }

    fn start(
        binaries: &Binaries,
        identity: Identity,
        root: &Path,
        durability: Durability,
    ) -> Result<Cluster, ClusterError> {
        let data = root.join("data");
        let socket_dir = root.join("run");
        let log_path = root.join("postgres.log");
        fs::create_dir_all(&socket_dir).map_err(io(format!("create {}", socket_dir.display())))?;
        identity.hand_over(&socket_dir, 0o750)?;
        if !data.join("PG_VERSION").is_file() {
            identity.make_private_dir(&data)?;
            let mut initdb = identity.command(&binaries.dir.join("initdb"), root);
            initdb
                .args([
                    "--auth=trust",
                    "--username=postgres",
                    "--encoding=UTF8",
                    "--locale=C",
                    "-D",
                ])
                .arg(&data);
            if durability == Durability::Throwaway {
                initdb.arg("--no-sync");
            }
            let output = initdb.output().map_err(io("run initdb"))?;
            if !output.status.success() {
                return Err(ClusterError::Command {
                    action: "initdb".into(),
                    detail: String::from_utf8_lossy(&output.stderr).trim().to_owned(),
                });
            }
        }
        let log = File::create(&log_path).map_err(io(format!("create {}", log_path.display())))?;
        let log_err = log.try_clone().map_err(io("duplicate log handle"))?;
        let mut postgres = identity.command(&binaries.dir.join("postgres"), root);
        postgres
            .arg("-D")
            .arg(&data)
            .arg("-k")
            .arg(&socket_dir)
            .args([
                "-p",
                &PORT.to_string(),
                "-c",
                "listen_addresses=",
                "-c",
                "max_connections=300",
            ])
            .stdout(log)
            .stderr(log_err);
        if durability == Durability::Throwaway {
            postgres.args([
                "-c",
                "fsync=off",
                "-c",
                "synchronous_commit=off",
                "-c",
                "full_page_writes=off",
            ]);
        }
        let child = postgres.spawn().map_err(io("start postgres"))?;
        let mut cluster = Cluster {
            child: Some(child),
            root: root.to_owned(),
            socket_dir,
            temporary: false,
            durability,
        };
        cluster.wait_ready(&data, &log_path)?;
        Ok(cluster)
    }

    fn wait_ready(&mut self, data: &Path, log_path: &Path) -> Result<(), ClusterError> {
        let deadline = Instant::now() + START_TIMEOUT;
        let log_tail = || {
            let text = fs::read_to_string(log_path).unwrap_or_default();
            text.lines()
                .rev()
                .take(15)
                .collect::<Vec<_>>()
                .into_iter()
                .rev()
                .collect::<Vec<_>>()
                .join("\n")
        };
        loop {
            // postmaster.pid: line 1 is the server's pid (a stale file from an unclean stop names
            // another), line 8 its status; `ready` means accepting connections.
            let status = fs::read_to_string(data.join("postmaster.pid")).unwrap_or_default();
            let ours = self.child.as_ref().map(|child| child.id().to_string());
            let mut lines = status.lines().map(str::trim);
            if lines.next().map(str::to_owned) == ours && lines.nth(6) == Some("ready") {
                return Ok(());
            }
            if let Some(child) = self.child.as_mut()
                && let Ok(Some(exit)) = child.try_wait()
            {
                self.child = None;
                return Err(ClusterError::Command {
                    action: "postgres".into(),
                    detail: format!("exited with {exit} during startup; log tail:\n{}", log_tail()),
                });
            }
            if Instant::now() > deadline {
                return Err(ClusterError::NotReady(START_TIMEOUT, log_tail()));
            }
            std::thread::sleep(Duration::from_millis(25));
        }
    }

    /// Stops the server (a fast shutdown, as [`Cluster::stop`]) and starts it again on the same
    /// data, socket and port: what a database restart looks like to its clients. A temporary
    /// cluster keeps being removed on drop or by a reaper.
    pub fn restart(&mut self, binaries: &Binaries) -> Result<(), ClusterError> {
        self.stop()?;
        let mut restarted = Cluster::start(binaries, Identity::current()?, &self.root, self.durability)?;
        self.child = restarted.child.take();
        if self.temporary {
            // The first reaper no longer matches the server's pid; this one watches the new server.
            self.spawn_reaper()?;
        }
        Ok(())
    }

    /// A reaper in its own process group (so a terminal Ctrl-C does not reach it) that waits for
    /// this process to exit, then stops PostgreSQL and removes the cluster directory. It signals
    /// only while the cluster's `postmaster.pid` still names the server, so after a normal drop
    /// (which removes the directory) a reused pid is never signalled.
    fn spawn_reaper(&self) -> Result<(), ClusterError> {
        let Some(child) = self.child.as_ref() else {
            return Ok(());
        };
        use std::os::unix::process::CommandExt;
        Command::new("/bin/sh")
            .arg("-c")
            .arg(
                r#"while kill -0 "$1" 2>/dev/null; do sleep 0.3; done
ours() { [ "$(head -n 1 "$3/data/postmaster.pid" 2>/dev/null)" = "$2" ]; }
ours && kill -INT "$2" 2>/dev/null
n=0; while ours && kill -0 "$2" 2>/dev/null && [ $n -lt 100 ]; do sleep 0.1; n=$((n+1)); done
ours && kill -KILL "$2" 2>/dev/null
rm -rf "$3""#,
            )
            .arg("steward-pg-reaper")
            .arg(std::process::id().to_string())
            .arg(child.id().to_string())
            .arg(&self.root)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .process_group(0)
            .spawn()
            .map_err(io("start the cluster reaper"))?;
        Ok(())
    }

    /// A connection URL for `database` over the cluster's Unix socket, as the `postgres` superuser
    /// (see [`with_user`] for the role logins).
    pub fn url(&self, database: &str) -> String {
        format!(
            "postgres://postgres@localhost:{PORT}/{database}?host={}",
            self.socket_dir.display()
        )
    }

    pub fn socket_dir(&self) -> &Path {
        &self.socket_dir
    }

    /// The PostgreSQL server's process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// Fast shutdown: disconnects clients, then stops. Waits for the server to exit.
    pub fn stop(&mut self) -> Result<(), ClusterError> {
        if let Some(mut child) = self.child.take() {
            let pid = Pid::from_raw(child.id() as i32);
            if child.try_wait().map_err(io("check postgres"))?.is_none() {
                let _ = kill(pid, Signal::SIGINT);
                let deadline = Instant::now() + Duration::from_secs(30);
                while child.try_wait().map_err(io("wait for postgres"))?.is_none() {
                    if Instant::now() > deadline {
                        let _ = child.kill();
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        }
        Ok(())
    }

    /// Waits until the server exits on its own (for example after a terminal Ctrl-C).
    pub fn wait(&mut self) -> Result<(), ClusterError> {
        if let Some(mut child) = self.child.take() {
            child.wait().map_err(io("wait for postgres"))?;
        }
        Ok(())
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = self.stop();
        if self.temporary {
            let _ = fs::remove_dir_all(&self.root);
        }
    }
}

fn fresh_temp_dir() -> Result<PathBuf, ClusterError> {
    let base = std::env::temp_dir();
    let pid = std::process::id();
    for attempt in 0u32..1000 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.subsec_nanos())
            .unwrap_or(0);
        let dir = base.join(format!("steward-pg-{pid}-{nanos:x}-{attempt}"));
        match fs::create_dir(&dir) {
            Ok(()) => {
                fs::set_permissions(&dir, fs::Permissions::from_mode(0o700))
                    .map_err(io(format!("chmod {}", dir.display())))?;
                return Ok(dir);
            }
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(error) => return Err(io(format!("create {}", dir.display()))(error)),
        }
    }
    Err(ClusterError::Command {
        action: "create a temporary directory".into(),
        detail: "every candidate name was taken".into(),
    })
}

/// `url` with its user replaced by `user` and any password dropped: the role logins
/// authenticate by peer (production) or trust on a private socket (dev and tests), never by a
/// password in a URL.
pub fn with_user(url: &str, user: &str) -> String {
    let Some(scheme_end) = url.find("://").map(|i| i + 3) else {
        return url.to_owned();
    };
    let rest = &url[scheme_end..];
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let host = match rest[..authority_end].rfind('@') {
        Some(at) => &rest[at + 1..],
        None => rest,
    };
    format!("{}{user}@{host}", &url[..scheme_end])
}

#[cfg(test)]
mod url_tests {
    use super::with_user;

    #[test]
    fn replaces_the_user_and_drops_the_password() {
        assert_eq!(
            with_user(
                "postgres://postgres@localhost:5432/steward?host=/tmp/run",
                "steward_api"
            ),
            "postgres://steward_api@localhost:5432/steward?host=/tmp/run"
        );
        assert_eq!(
            with_user("postgres://admin:s3cret@db.internal/app", "steward_owner"),
            "postgres://steward_owner@db.internal/app"
        );
        assert_eq!(with_user("postgres://db/app", "u"), "postgres://u@db/app");
        assert_eq!(
            with_user("postgres:///app?host=/run/postgresql", "u"),
            "postgres://u@/app?host=/run/postgresql"
        );
    }
}

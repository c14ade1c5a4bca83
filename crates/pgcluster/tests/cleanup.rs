//! Temporary clusters leave nothing behind: not when dropped, and not when their process dies
//! without dropping them (a test binary's statics are never dropped).

use std::path::PathBuf;
use std::process::Command;
use std::time::{Duration, Instant};

use pgcluster::{Binaries, Cluster};

fn alive(pid: u32) -> bool {
    // A reaped process has no /proc entry; a zombie reports state Z.
    std::fs::read_to_string(format!("/proc/{pid}/stat"))
        .map(|stat| {
            stat.rsplit(')')
                .next()
                .is_some_and(|rest| !rest.trim_start().starts_with('Z'))
        })
        .unwrap_or(false)
}

fn wait_until(what: &str, condition: impl Fn() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn dropping_a_temporary_cluster_stops_it_and_removes_its_directory() {
    let binaries = Binaries::locate().expect("PostgreSQL binaries (run `cargo xtask test`)");
    let cluster = Cluster::temporary(&binaries).expect("start");
    let pid = cluster.pid().expect("running");
    let root = cluster.socket_dir().parent().expect("root").to_owned();
    assert!(alive(pid));
    assert!(
        cluster.socket_dir().join(".s.PGSQL.5432").exists(),
        "listening on its socket"
    );
    drop(cluster);
    assert!(!alive(pid), "the server stopped");
    assert!(!root.exists(), "the directory is gone");
}

#[test]
fn a_restarted_cluster_serves_again_on_the_same_socket_and_is_still_removed_on_drop() {
    let binaries = Binaries::locate().expect("PostgreSQL binaries (run `cargo xtask test`)");
    let mut cluster = Cluster::temporary(&binaries).expect("start");
    let (first, url) = (cluster.pid().expect("running"), cluster.url("postgres"));
    let root = cluster.socket_dir().parent().expect("root").to_owned();
    cluster.restart(&binaries).expect("restart");
    let second = cluster.pid().expect("running again");
    assert_ne!(first, second, "a new server");
    assert!(!alive(first), "the first server stopped");
    assert!(alive(second));
    assert_eq!(cluster.url("postgres"), url, "clients reconnect to the same address");
    assert!(cluster.socket_dir().join(".s.PGSQL.5432").exists(), "listening again");
    drop(cluster);
    assert!(!alive(second), "the restarted server stopped on drop");
    assert!(!root.exists(), "the directory is gone");
}

/// Run as a child by the test below: starts a cluster, reports it, and exits without dropping.
#[test]
fn abandoned_cluster_child() {
    if std::env::var_os("PGCLUSTER_ABANDON").is_none() {
        return;
    }
    let binaries = Binaries::locate().expect("binaries");
    let cluster = Cluster::temporary(&binaries).expect("start");
    println!("ROOT={}", cluster.socket_dir().parent().expect("root").display());
    println!("PID={}", cluster.pid().expect("pid"));
    std::process::exit(0);
}

#[test]
fn a_cluster_abandoned_by_a_dying_process_is_reaped() {
    let output = Command::new(std::env::current_exe().expect("test binary"))
        .args(["--exact", "abandoned_cluster_child", "--nocapture", "--test-threads=1"])
        .env("PGCLUSTER_ABANDON", "1")
        .output()
        .expect("run the child");
    let stdout = String::from_utf8_lossy(&output.stdout);
    let field = |name: &str| {
        stdout
            .lines()
            .find_map(|line| line.split_once(name).map(|(_, value)| value))
            .unwrap_or_else(|| panic!("child did not report {name}: {stdout}"))
            .to_owned()
    };
    let root = PathBuf::from(field("ROOT="));
    let pid: u32 = field("PID=").parse().expect("pid");
    wait_until("the abandoned server stops", || !alive(pid));
    wait_until("the abandoned directory is removed", || !root.exists());
}

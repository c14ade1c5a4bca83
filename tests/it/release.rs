//! One release identity in every binary an operator installs: each answers `--version` with
//! `<binary> <identity>`, the identity the build made (`release::IDENTITY`: the workspace
//! version and the commit), and the same for all.
//!
//! The binaries are the ones `cargo xtask test` builds beside this test (it tests the whole
//! workspace); a narrowed run that did not build them says so.

use std::path::PathBuf;
use std::process::Command;

/// Every shipped binary: each role's (its systemd unit's), the browser's egress relay, and the
/// operator's and owner's commands.
fn shipped() -> Vec<&'static str> {
    let mut binaries: Vec<&str> = crate::systemd::ROLES.iter().map(|(_, binary)| *binary).collect();
    binaries.extend(["steward-migrate", "steward-preflight", "steward", "mail-mcp"]);
    binaries.sort_unstable();
    binaries.dedup();
    binaries
}

fn target_dir() -> PathBuf {
    let test = std::env::current_exe().expect("the test's own path");
    // target/<profile>/deps/it-<hash> → target/<profile>
    test.parent()
        .and_then(|deps| deps.parent())
        .expect("the profile directory")
        .to_owned()
}

#[test]
fn every_shipped_binary_reports_the_same_release_identity() {
    let expected = {
        let output = Command::new(env!("CARGO"))
            .args([
                "metadata",
                "--format-version",
                "1",
                "--no-deps",
                "--offline",
                "--locked",
            ])
            .output()
            .expect("cargo metadata");
        let metadata: serde_json::Value = serde_json::from_slice(&output.stdout).expect("metadata");
        metadata["packages"][0]["version"]
            .as_str()
            .expect("a version")
            .to_owned()
    };
    let mut identities = Vec::new();
    for binary in shipped() {
        assert!(
            crate::bin_targets().contains(binary),
            "{binary} is a binary of the workspace"
        );
        let path = target_dir().join(binary);
        assert!(
            path.exists(),
            "{} is not built: run the whole suite (`cargo xtask test`), which builds every binary",
            path.display()
        );
        let output = Command::new(&path)
            .arg("--version")
            .env_clear()
            .output()
            .unwrap_or_else(|error| panic!("run {binary} --version: {error}"));
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(output.status.success(), "{binary} --version: {output:?}");
        let identity = stdout
            .trim_end()
            .strip_prefix(&format!("{binary} "))
            .unwrap_or_else(|| panic!("{binary} --version printed `{stdout}`"))
            .to_owned();
        identities.push((binary, identity));
    }
    let (_, first) = &identities[0];
    let (version, commit) = first.split_once('+').expect("<version>+<commit>");
    assert_eq!(version, expected, "the workspace version");
    assert!(
        commit == "unknown" || (commit.len() == 12 && commit.bytes().all(|byte| byte.is_ascii_hexdigit())),
        "{first}"
    );
    for (binary, identity) in &identities {
        assert_eq!(
            identity, first,
            "{binary} reports another release than {}",
            identities[0].0
        );
    }
}

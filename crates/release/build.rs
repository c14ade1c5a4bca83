//! Finds the commit this build is made from: `STEWARD_BUILD_COMMIT` when set (a build from a
//! source archive, which has no repository), else `git rev-parse HEAD` of the workspace, else
//! `unknown`. The build script runs again when the variable or the checked-out commit changes.

use std::path::PathBuf;
use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .ok()?;
    if !output.status.success() {
        return None;
    }
    let text = String::from_utf8(output.stdout).ok()?;
    let text = text.trim();
    (!text.is_empty()).then(|| text.to_owned())
}

fn main() {
    println!("cargo:rerun-if-env-changed=STEWARD_BUILD_COMMIT");
    let commit = match std::env::var("STEWARD_BUILD_COMMIT") {
        Ok(commit) if !commit.trim().is_empty() => commit.trim().to_owned(),
        _ => {
            // Watch what moves when the checked-out commit does: HEAD, the branch it names, and
            // the packed refs.
            if let (Some(git_dir), Some(common_dir)) = (
                git(&["rev-parse", "--absolute-git-dir"]),
                git(&["rev-parse", "--path-format=absolute", "--git-common-dir"]),
            ) {
                let git_dir = PathBuf::from(git_dir);
                let common_dir = PathBuf::from(common_dir);
                println!("cargo:rerun-if-changed={}", git_dir.join("HEAD").display());
                println!("cargo:rerun-if-changed={}", common_dir.join("packed-refs").display());
                if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
                    println!("cargo:rerun-if-changed={}", common_dir.join(branch).display());
                }
            }
            git(&["rev-parse", "HEAD"]).unwrap_or_else(|| "unknown".to_owned())
        }
    };
    let valid = commit.len() <= 64 && commit.bytes().all(|byte| byte.is_ascii_alphanumeric());
    let commit = if valid { commit } else { "unknown".to_owned() };
    let short: String = commit.chars().take(12).collect();
    println!("cargo:rustc-env=STEWARD_COMMIT={short}");
}

//! The release identity of this build: the workspace version and the commit it was built from,
//! as `<version>+<commit>` (semantic versioning's build metadata; the commit is the first 12
//! hex digits, or `unknown` for a build outside a repository without `STEWARD_BUILD_COMMIT`).
//!
//! Every binary reports it (`<binary> --version`), `steward-api` carries it in the
//! `Steward-Release` header of `/health/ready` and serves it as `release.txt`, so an operator can
//! compare what runs with what was installed. It is made at build time, never configured.

/// The workspace version.
pub const VERSION: &str = env!("CARGO_PKG_VERSION");

/// The commit the build was made from (12 hex digits, or `unknown`).
pub const COMMIT: &str = env!("STEWARD_COMMIT");

/// `<version>+<commit>`.
pub const IDENTITY: &str = concat!(env!("CARGO_PKG_VERSION"), "+", env!("STEWARD_COMMIT"));

/// The line `--version` prints: `<binary> <identity>`.
pub fn version_line(binary: &str) -> String {
    format!("{binary} {IDENTITY}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_identity_is_the_version_and_the_commit_checked_out() {
        assert_eq!(IDENTITY, format!("{VERSION}+{COMMIT}"));
        assert_eq!(VERSION, env!("CARGO_PKG_VERSION"));
        // Built in this repository: the commit is HEAD's, unless the build was told otherwise.
        if std::env::var_os("STEWARD_BUILD_COMMIT").is_none() {
            let head = std::process::Command::new("git")
                .args(["rev-parse", "HEAD"])
                .current_dir(env!("CARGO_MANIFEST_DIR"))
                .output()
                .expect("git rev-parse HEAD");
            let head = String::from_utf8_lossy(&head.stdout);
            assert_eq!(COMMIT.len(), 12, "{COMMIT}");
            assert!(head.starts_with(COMMIT), "{COMMIT} is not HEAD {head}");
        }
        assert_eq!(version_line("steward-api"), format!("steward-api {IDENTITY}"));
    }
}

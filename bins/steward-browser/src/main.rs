//! `steward-browser`: the hosted browser role. It is not complete (see the library's
//! documentation), so it refuses to start rather than run half a role.

use std::process::ExitCode;

fn main() -> ExitCode {
    eprintln!(
        "steward-browser: the hosted browser is not available in this release (only its egress proxy is built); nothing was started"
    );
    ExitCode::from(2)
}

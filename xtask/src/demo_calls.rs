//! Calling in the local stacks (`cargo xtask e2e`, `cargo xtask contract`): a reviewed call
//! configuration written to the stack's directory, and the variables that turn calling on for
//! every role with it. (The call worker and the provider stand-in are not started here: a
//! placed call stays approved until a call worker places it.)

use std::fs;
use std::path::Path;

use anyhow::Context;

/// The demo's configuration: a public profile of nobody real.
const CONFIGURATION: &str = r#"{
  "version": 1,
  "account_id": "demo",
  "phone_number": "+15550100000",
  "public_name": "Alex Rivera",
  "public_profile": "Alex Rivera is a furniture maker in Portland. Alex takes commissions by email and answers within two working days.",
  "voice": "maya",
  "max_duration_minutes": 5,
  "webhook_url": "https://steward.example.org/webhooks/callprov"
}
"#;

/// Writes `dir/callprov-configuration.json` (writable by its owner only) and returns the
/// variables that turn calling on with it.
pub fn environment(dir: &Path) -> anyhow::Result<Vec<(String, String)>> {
    fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    let path = dir.join("callprov-configuration.json");
    fs::write(&path, CONFIGURATION).with_context(|| format!("write {}", path.display()))?;
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&path, fs::Permissions::from_mode(0o644)).context("chmod the call configuration")?;
    Ok(vec![
        ("AGENT_CALL_ENABLED".to_owned(), "1".to_owned()),
        ("CALLPROV_CONFIGURATION_FILE".to_owned(), path.display().to_string()),
    ])
}

//! The call configuration file, read as the roles read every file that decides what they may do:
//! only when nobody but its owner can write it (`hardening::config_file::read_protected`). The
//! schema and the revision are `domain::call`'s (pure, shared with the worker, which pins
//! approvals to the revision without holding the provider key).

use std::path::Path;

use hardening::config_file::ConfigFileError;

pub use domain::call::{
    CallConfiguration, ConfigError, DEFAULT_ASSISTANT_NAME, MAX_DURATION_MINUTES, Revision, WEBHOOK_PATH,
};

/// Why the configuration file was not loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    #[error("the call configuration file {0}")]
    File(#[from] ConfigFileError),
    #[error("{0}")]
    Invalid(#[from] ConfigError),
}

/// Reads the file at `path` (operator-writable only) and validates it.
pub fn load(path: &Path) -> Result<CallConfiguration, LoadError> {
    let bytes = hardening::config_file::read_protected(path)?;
    Ok(CallConfiguration::parse(&bytes)?)
}

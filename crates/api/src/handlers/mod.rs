//! Request handlers, one module per resource.

pub mod approvals;
pub mod artifacts;
pub mod email;
pub mod events;
pub mod folder_proposals;
pub mod folders;
pub mod health;
pub mod notifications;
pub mod runs;
pub mod schedules;
pub mod sessions;
pub mod settings;
pub mod web_session;

use domain::ErrorCode;

use crate::problem::ApiError;

/// Parses a path id; anything that is not an id of this kind names no resource.
fn parse_id<T>(text: &str, parse: fn(&str) -> Option<T>, missing: ErrorCode) -> Result<T, ApiError> {
    parse(text).ok_or_else(|| ApiError::new(missing).detail("no resource has this id"))
}

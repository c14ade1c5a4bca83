//! Request handlers, one module per resource.

pub mod approvals;
pub mod artifacts;
pub mod browser;
pub mod calls;
pub mod drafts;
pub mod email;
pub mod events;
pub mod feedback;
pub mod folder_proposals;
pub mod folders;
pub mod health;
pub mod imports;
pub mod memory;
pub mod notifications;
pub mod openapi;
pub mod people;
pub mod runs;
pub mod schedules;
pub mod sessions;
pub mod settings;
pub mod subscriptions;
pub mod web_session;

use domain::ErrorCode;
use domain::cursor::CursorKind;

use crate::AppState;
use crate::problem::ApiError;

/// Cuts `rows`, fetched one past `limit`, to a page; the next page's cursor (of `kind`, the
/// last row's position as `encode` writes it) when more rows follow.
fn next_page<R>(
    state: &AppState,
    kind: CursorKind,
    rows: &mut Vec<R>,
    limit: u32,
    encode: impl Fn(&R) -> Vec<u8>,
) -> Option<String> {
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    rows.last()
        .filter(|_| more)
        .map(|last| state.settings.cursors.encode_bytes(kind, &encode(last)))
}

/// A position that is a listing's own sequence number (`position` columns), as a cursor holds it.
fn decode_sequence(bytes: &[u8]) -> Option<i64> {
    Some(i64::from_be_bytes(bytes.try_into().ok()?))
}

/// Parses a path id; anything that is not an id of this kind names no resource.
fn parse_id<T>(text: &str, parse: fn(&str) -> Option<T>, missing: ErrorCode) -> Result<T, ApiError> {
    parse(text).ok_or_else(|| ApiError::new(missing).detail("no resource has this id"))
}

/// A listing's page size: `requested`, else `default`; outside 1 to `max` it is refused.
fn page_limit(requested: Option<u32>, default: u32, max: u32) -> Result<u32, ApiError> {
    let limit = requested.unwrap_or(default);
    if !(1..=max).contains(&limit) {
        return Err(ApiError::new(ErrorCode::InvalidRequest)
            .detail(format!("limit must be between 1 and {max}"))
            .field("limit"));
    }
    Ok(limit)
}

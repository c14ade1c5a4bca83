//! APNs payloads: the alert text (the next action, the tool for approvals) and the closed
//! version-1 tap dictionary. Nothing else goes in: no message text, recipients, subjects,
//! bodies, instructions, results or failure details.

use serde_json::json;
use store::DueNotification;
use uuid::Uuid;

/// APNs refuses payloads larger than this.
pub const MAX_PAYLOAD_BYTES: usize = 4096;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("the payload is {0} bytes, over the 4096-byte limit")]
pub struct TooLarge(pub usize);

fn checked(value: serde_json::Value) -> Result<Vec<u8>, TooLarge> {
    let bytes = serde_json::to_vec(&value).unwrap_or_default();
    if bytes.len() > MAX_PAYLOAD_BYTES {
        return Err(TooLarge(bytes.len()));
    }
    Ok(bytes)
}

/// The alert push for a due notification.
pub fn alert(due: &DueNotification) -> Result<Vec<u8>, TooLarge> {
    let tap = due.notification.payload();
    let thread = tap.session_id.or(tap.occurrence_id).map(|id| id.to_string());
    checked(json!({
        "aps": {
            "alert": { "body": due.alert().text() },
            "sound": "default",
            "thread-id": thread,
        },
        "steward": tap,
    }))
}

/// The background push that tells devices to remove a delivered alert that no longer applies.
pub fn withdrawal(notification: Uuid) -> Result<Vec<u8>, TooLarge> {
    checked(json!({
        "aps": { "content-available": 1 },
        "steward": { "v": 1, "kind": "withdrawn", "notification_id": notification },
    }))
}

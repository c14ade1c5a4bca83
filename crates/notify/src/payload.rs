//! Push payloads, APNs and Web Push alike: the alert text (the next action, the tool for
//! approvals) and the closed version-1 tap dictionary. Nothing else goes in: no message text,
//! recipients, subjects, bodies, instructions, results or failure details.

use serde_json::json;
use store::DueNotification;
use uuid::Uuid;

/// APNs refuses payloads larger than this.
pub const MAX_PAYLOAD_BYTES: usize = 4096;

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("the payload is {0} bytes, over the {1}-byte limit")]
pub struct TooLarge(pub usize, pub usize);

fn within(value: &serde_json::Value, limit: usize) -> Result<Vec<u8>, TooLarge> {
    let bytes = serde_json::to_vec(value).unwrap_or_default();
    if bytes.len() > limit {
        return Err(TooLarge(bytes.len(), limit));
    }
    Ok(bytes)
}

fn checked(value: serde_json::Value) -> Result<Vec<u8>, TooLarge> {
    within(&value, MAX_PAYLOAD_BYTES)
}

/// The Web Push alert for a due notification: the alert text and the tap dictionary, nothing
/// else. The service worker shows the text, tags it by conversation and closes it on withdrawal.
pub fn web_alert(due: &DueNotification) -> Result<Vec<u8>, TooLarge> {
    within(
        &json!({ "alert": due.alert().text(), "steward": due.notification.payload() }),
        crate::webpush::MAX_PAYLOAD_BYTES,
    )
}

/// The Web Push message that closes a delivered alert that no longer applies.
pub fn web_withdrawal(notification: Uuid) -> Result<Vec<u8>, TooLarge> {
    within(
        &json!({ "steward": { "v": 1, "kind": "withdrawn", "notification_id": notification } }),
        crate::webpush::MAX_PAYLOAD_BYTES,
    )
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

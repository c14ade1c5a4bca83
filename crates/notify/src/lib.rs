//! Push delivery: the APNs and Web Push clients, the payloads they send, and the dispatcher that
//! drains the notification outbox.

pub mod apns;
pub mod dispatch;
pub mod payload;
pub mod webpush;

/// What a push provider made of a push.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Sent {
    Delivered,
    /// The device is gone (APNs `BadDeviceToken`, 410 `Unregistered`; a Web Push subscription's
    /// 404 or 410): deactivated, never retried.
    DeviceGone(String),
    /// Too many requests, a server error or no answer: try again later.
    Retry,
    /// Refused for another reason (a configuration problem): not retried.
    Rejected(String),
}

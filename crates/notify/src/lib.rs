//! Push delivery: the APNs client, the payloads it sends, and the dispatcher that drains the
//! notification outbox.

pub mod apns;
pub mod dispatch;
pub mod payload;

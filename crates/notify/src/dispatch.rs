//! Drains the outbox: claims due notifications (lease), pushes each to every active device not
//! yet delivered to, records each delivery at once, and withdraws delivered alerts that became
//! obsolete or were acknowledged. A crash loses nothing: an unfinished claim expires and the
//! next claim skips devices already recorded, so a push repeats only if the crash fell between
//! sending it and recording it.

use std::time::Duration;

use jiff::Timestamp;
use store::{DeviceTarget, PushAddress, Store};
use uuid::Uuid;

use crate::Sent;
use crate::apns::{Apns, ApnsError, Push, PushType};
use crate::payload;
use crate::webpush::{Urgency, WebPush, WebPushError, WebPushMessage};

/// How long a push service keeps a Web Push message for a device that is offline.
pub const WEB_PUSH_TTL: Duration = Duration::from_secs(24 * 60 * 60);

#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    #[error("{0}")]
    Store(#[from] store::StoreError),
    #[error("{0}")]
    Apns(#[from] ApnsError),
    #[error("{0}")]
    WebPush(#[from] WebPushError),
}

/// What one pass did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Pass {
    pub delivered: usize,
    pub devices_gone: usize,
    pub retried: usize,
    pub withdrawn: usize,
}

/// The push providers this notifier delivers through: at least one is configured.
#[derive(Debug, Default)]
pub struct Providers {
    pub apns: Option<Apns>,
    pub web_push: Option<WebPush>,
}

/// One notification's messages, for each kind of device.
struct Messages {
    apns: Push,
    web_push: WebPushMessage,
}

impl Providers {
    async fn send(&self, device: &DeviceTarget, messages: &Messages) -> Result<Sent, DispatchError> {
        Ok(match (&device.address, &self.apns, &self.web_push) {
            (PushAddress::Apns { .. }, Some(apns), _) => apns.send(device, &messages.apns).await?,
            (PushAddress::WebPush { endpoint, p256dh, auth }, _, Some(web_push)) => {
                web_push.send(endpoint, p256dh, auth, &messages.web_push).await?
            }
            (PushAddress::Apns { .. }, None, _) => Sent::Rejected("APNs is not configured".into()),
            (PushAddress::WebPush { .. }, _, None) => Sent::Rejected("Web Push is not configured".into()),
        })
    }
}

/// A push service topic for a notification: its id's 32 hex digits (RFC 8030 allows 32
/// base64url characters), so a withdrawal replaces its alert if that was not delivered yet.
fn topic(notification: Uuid) -> String {
    notification.simple().to_string()
}

#[derive(Debug)]
pub struct Dispatcher {
    pub store: Store,
    pub providers: Providers,
    pub worker: String,
    pub lease_seconds: u32,
}

/// Retry backoff: doubling from two seconds, at most five minutes.
fn backoff(attempts: i32) -> u32 {
    2u32.saturating_pow(attempts.clamp(1, 9) as u32).min(300)
}

impl Dispatcher {
    /// One pass over notifications due at `now`.
    pub async fn pass(&self, now: Timestamp) -> Result<Pass, DispatchError> {
        let mut pass = Pass::default();
        for due in self
            .store
            .claim_due_notifications(&self.worker, now, self.lease_seconds, 50)
            .await?
        {
            let id = due.notification.id;
            let messages = payload::alert(&due).and_then(|apns| {
                Ok(Messages {
                    apns: Push {
                        payload: apns,
                        push_type: PushType::Alert,
                        collapse_id: id.to_string(),
                    },
                    web_push: WebPushMessage {
                        payload: payload::web_alert(&due)?,
                        urgency: Urgency::High,
                        ttl: WEB_PUSH_TTL,
                        topic: topic(id),
                    },
                })
            });
            let messages = match messages {
                Ok(messages) => messages,
                Err(error) => {
                    tracing::error!(%error, notification = %id, "payload too large; not sent");
                    self.store.finish_delivery(id, &self.worker).await?;
                    continue;
                }
            };
            let mut retry = false;
            for device in &due.devices {
                match self.providers.send(device, &messages).await? {
                    Sent::Delivered => {
                        self.store.record_delivery(id, device.id).await?;
                        pass.delivered += 1;
                    }
                    Sent::DeviceGone(reason) => {
                        self.store.deactivate_device(device.id, &reason).await?;
                        pass.devices_gone += 1;
                    }
                    Sent::Retry => retry = true,
                    Sent::Rejected(reason) => tracing::error!(reason, notification = %id, "a push was refused"),
                }
            }
            if retry {
                let attempts = self.store.notification_attempts(id).await?;
                self.store.retry_delivery(id, &self.worker, backoff(attempts)).await?;
                pass.retried += 1;
            } else {
                self.store.finish_delivery(id, &self.worker).await?;
            }
        }
        for (id, devices) in self.store.pending_withdrawals(50).await? {
            if let (Ok(apns), Ok(web_push)) = (payload::withdrawal(id), payload::web_withdrawal(id)) {
                let messages = Messages {
                    apns: Push {
                        payload: apns,
                        push_type: PushType::Background,
                        collapse_id: id.to_string(),
                    },
                    web_push: WebPushMessage {
                        payload: web_push,
                        urgency: Urgency::Normal,
                        ttl: WEB_PUSH_TTL,
                        topic: topic(id),
                    },
                };
                for device in &devices {
                    if let Sent::DeviceGone(reason) = self.providers.send(device, &messages).await? {
                        self.store.deactivate_device(device.id, &reason).await?;
                    }
                }
            }
            self.store.finish_withdrawal(id).await?;
            pass.withdrawn += 1;
        }
        Ok(pass)
    }
}

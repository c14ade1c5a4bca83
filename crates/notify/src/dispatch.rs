//! Drains the outbox: claims due notifications (lease), pushes each to every active device not
//! yet delivered to, records each delivery at once, and withdraws delivered alerts that became
//! obsolete or were acknowledged. A crash loses nothing: an unfinished claim expires and the
//! next claim skips devices already recorded, so a push repeats only if the crash fell between
//! sending it and recording it.

use jiff::Timestamp;
use store::Store;

use crate::apns::{Apns, ApnsError, Push, PushType, Sent};
use crate::payload;

#[derive(Debug, thiserror::Error)]
pub enum DispatchError {
    #[error("{0}")]
    Store(#[from] store::StoreError),
    #[error("{0}")]
    Apns(#[from] ApnsError),
}

/// What one pass did.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Pass {
    pub delivered: usize,
    pub devices_gone: usize,
    pub retried: usize,
    pub withdrawn: usize,
}

#[derive(Debug)]
pub struct Dispatcher {
    pub store: Store,
    pub apns: Apns,
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
            let push = match payload::alert(&due) {
                Ok(bytes) => Push {
                    payload: bytes,
                    push_type: PushType::Alert,
                    collapse_id: id.to_string(),
                },
                Err(error) => {
                    tracing::error!(%error, notification = %id, "payload too large; not sent");
                    self.store.finish_delivery(id, &self.worker).await?;
                    continue;
                }
            };
            let mut retry = false;
            for device in &due.devices {
                match self.apns.send(device, &push).await? {
                    Sent::Delivered => {
                        self.store.record_delivery(id, device.id).await?;
                        pass.delivered += 1;
                    }
                    Sent::DeviceGone(reason) => {
                        self.store.deactivate_device(device.id, &reason).await?;
                        pass.devices_gone += 1;
                    }
                    Sent::Retry => retry = true,
                    Sent::Rejected(reason) => tracing::error!(reason, notification = %id, "APNs refused a push"),
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
            if let Ok(bytes) = payload::withdrawal(id) {
                let push = Push {
                    payload: bytes,
                    push_type: PushType::Background,
                    collapse_id: id.to_string(),
                };
                for device in &devices {
                    if let Sent::DeviceGone(reason) = self.apns.send(device, &push).await? {
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

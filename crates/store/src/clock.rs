//! The instant run timing and push delays are measured against: a run's working time and
//! deadline, how long it may wait for the owner, and when a push may leave. It is injected
//! ([`Store::with_clock`](crate::Store::with_clock)), so those rules are tested exactly; the
//! bookkeeping times of rows (`created_at`, `updated_at`) stay the database's.

use jiff::Timestamp;

/// A source of the current instant.
pub trait Clock: Send + Sync + std::fmt::Debug {
    fn now(&self) -> Timestamp;
}

/// The host's clock.
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

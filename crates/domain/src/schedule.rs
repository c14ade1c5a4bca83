//! A schedule as the owner defines it, checked: what `POST /v1/schedules` stores.

use jiff::tz::TimeZone;

use crate::cadence::Daily;
use crate::names::names;
use crate::run::RunLimits;

/// A checked schedule definition. Its cadence's zone was looked up by name at the edge.
#[derive(Clone, Debug)]
pub struct ScheduleSpec {
    pub title: String,
    pub instruction: String,
    pub agent_id: String,
    pub agent_version: String,
    /// Among [`crate::cadence::SCHEDULE_SCOPES`], each once.
    pub requested_scopes: Vec<String>,
    pub limits: RunLimits,
    /// The wall time as given, `HH:MM:SS`.
    pub local_time: String,
    /// The IANA name of the zone.
    pub timezone: String,
    pub cadence: Daily,
    pub misfire_grace_seconds: u32,
    pub max_consecutive_failures: u32,
    /// How long each run may wait for the owner, 1 to [`crate::run::MAX_WAIT_TIMEOUT_SECONDS`].
    pub wait_timeout_seconds: u32,
}

impl ScheduleSpec {
    /// The zone of the cadence.
    pub fn zone(&self) -> &TimeZone {
        &self.cadence.zone
    }
}

names! {
    /// What became of one firing of a schedule.
    OccurrenceState ("occurrence state") {
        /// Its run is under way.
        Started => "started",
        /// It did not run (see `reason`, e.g. `misfire`).
        Skipped => "skipped",
        Completed => "completed",
        Failed => "failed",
        Cancelled => "cancelled",
    }
}

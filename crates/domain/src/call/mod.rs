//! Calling's pure parts: the call configuration and its revision (`configuration`), an outbound
//! brief (`brief`), the closed sets of names (the store keeps them as text; `call_records`'
//! `CHECK`s list the same names) and the limits.

mod brief;
mod configuration;

pub use brief::{Brief, BriefError, MAY_SAY_MAX_CHARS, PURPOSE_MAX_CHARS, VOICEMAIL_MAX_CHARS};
pub use configuration::{
    CallConfiguration, ConfigError, DEFAULT_ASSISTANT_NAME, MAX_DURATION_MINUTES, Revision, VERSION, WEBHOOK_PATH,
    is_e164,
};

use crate::names::names;

/// A call record's transcript and summary are removed this long after the call ended.
pub const RETENTION_DAYS: i64 = 30;

names! {
    /// Which way a call went.
    CallDirection ("call direction") {
        /// The public number was called: the assistant took a message.
        Inbound => "inbound",
        /// The assistant called out from an approved brief.
        Outbound => "outbound",
    }
}

names! {
    /// Where a call is (`migrations/0027_calls.sql` describes each state).
    CallState ("call state") {
        /// The owner approved the brief: the one outbound reservation, waiting for dispatch.
        Approved => "approved",
        /// The call worker's dispatch request is leaving.
        Dispatching => "dispatching",
        /// The dispatch's outcome is unknown: reconciled from the provider's history, never
        /// redialled; the reservation is held until it is resolved.
        Uncertain => "uncertain",
        /// The provider accepted the call (accepted, not necessarily answered).
        Dispatched => "dispatched",
        /// The call ended and its result is recorded.
        Finished => "finished",
        /// The provider refused it, the configuration changed, or reconciliation found nothing.
        NotPlaced => "not_placed",
        /// The owner cancelled it before dispatch.
        Cancelled => "cancelled",
    }
}

names! {
    /// Why an outbound call was not placed, or was settled without its result.
    CallFailure ("call failure") {
        /// The provider refused the dispatch, or could not be reached.
        Refused => "refused",
        /// The call configuration changed after the brief was approved.
        RevisionChanged => "revision_changed",
        /// The call configuration could not be read.
        ConfigurationMissing => "configuration_missing",
        /// The stored brief could not be placed.
        BriefInvalid => "brief_invalid",
        /// Reconciliation found no trace of an uncertain dispatch.
        NotFoundAtProvider => "not_found_at_provider",
        /// The provider lost the call's result.
        ResultUnavailable => "result_unavailable",
    }
}

impl CallState {
    /// Whether the call holds the outbound reservation.
    pub fn reserves(self) -> bool {
        matches!(
            self,
            CallState::Approved | CallState::Dispatching | CallState::Uncertain | CallState::Dispatched
        )
    }
}

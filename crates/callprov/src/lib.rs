//! The call provider, for the roles that hold its API key (the API and the call worker).
//!
//! - [`config`]: the operator's closed-schema call configuration file and its **revision**, the
//!   SHA-256 of its normalized form, which pins every outbound approval.
//! - [`key`]: the API key, only from the owner-only file `CALLPROV_API_KEY_FILE` (an inline
//!   `CALLPROV_API_KEY` is refused).
//! - [`script`]: what the assistant is told: the inbound number settings built from the public
//!   profile alone, and an outbound call's request built from an approved [`Brief`].
//! - [`client`]: the provider's HTTP API (rustls): number settings, dispatch (sent at most
//!   once), call detail, history and termination.
//!
//! The webhook listener (`steward-call-ingress`) does not link this crate: it never holds the
//! key.

pub mod client;
pub mod config;
pub mod key;
pub mod script;

pub use client::{CallDetail, CallProvError, Client, Dispatch, HistoryEntry, Turn};
pub use config::{CallConfiguration, ConfigError, LoadError, Revision};
pub use domain::call::{Brief, BriefError};
pub use script::{NumberSettings, dispatch_request};

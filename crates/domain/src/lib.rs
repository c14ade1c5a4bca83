//! Steward's domain: the types and rules every role shares, with no I/O.
//!
//! Nothing here reads a clock, the environment, the network or the disk: time, randomness and
//! environment values are parameters, so every rule is testable exactly.

pub mod address;
pub mod agent;
pub mod approval;
pub mod artifact;
pub mod browser;
pub mod cadence;
pub mod call;
pub mod cursor;
pub mod email;
pub mod env;
pub mod error_code;
pub mod feedback;
pub mod flags;
pub mod folder;
pub mod idempotency;
pub mod ids;
pub mod junk;
pub mod mail_environment;
pub mod mail_tools;
pub mod manifest;
pub mod memory;
pub mod models;
pub mod names;
pub mod notification;
pub mod people;
pub mod run;
pub mod schedule;
pub mod scope;
pub mod session;
pub mod site;
pub mod text;
pub mod untrusted;
pub mod web_push;

pub use error_code::ErrorCode;

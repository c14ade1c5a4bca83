//! The worker role's configuration, a library so the role's tests start workers from the same
//! environment parsing as the binary.

pub mod config;

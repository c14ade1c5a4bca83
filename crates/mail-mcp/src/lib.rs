//! The mail integration. So far: the owner-only credential documents ([`document`]), one per
//! account and scope, and the connected accounts loaded fail-closed at role start
//! ([`accounts`]). The Gmail client, the per-account mail tools and the `mail-mcp bootstrap`
//! operator CLI build on it. Only the roles that use mail link this crate: the scheduler and
//! the call roles never do (`tests/it/main.rs` checks it).

pub mod accounts;
pub mod document;

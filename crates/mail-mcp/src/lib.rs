//! The mail integration: the owner-only credential documents ([`document`]), the connected
//! accounts loaded fail-closed at role start ([`accounts`]), the Gmail REST client ([`gmail`]),
//! the messages the write and send tools build ([`message`]), the per-account mail tools with
//! their read-only reconciliation ([`tools`]), the operator's consent ceremony ([`bootstrap`],
//! the `mail-mcp bootstrap` command) and the rule every provider endpoint meets ([`endpoint`]).
//! Only the roles that use mail link this crate: the scheduler and the call roles never do
//! (`tests/it/main.rs` checks it).

pub mod accounts;
pub mod bootstrap;
pub mod document;
pub mod endpoint;
pub mod gmail;
pub mod message;
pub mod tools;

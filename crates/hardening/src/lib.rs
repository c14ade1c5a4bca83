//! Host hardening shared by every role: secret files are checked before they are opened,
//! configuration that decides what a role may do is read only when nobody but its owner can
//! change it, ACLs are inspected without opening anything, the process drops its privileges
//! before it starts threads, and environments holding what a role must never hold are refused.

pub mod acl;
mod checked_read;
pub mod config_file;
pub mod environment;
pub mod process;
pub mod secret_file;

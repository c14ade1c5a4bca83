//! Host hardening shared by every role: secret files are checked before they are opened, ACLs
//! are inspected without opening anything, the process drops its privileges before it starts
//! threads, and environments holding what a role must never hold are refused.

pub mod acl;
pub mod environment;
pub mod process;
pub mod secret_file;

//! Host hardening shared by every role. For now: reading a secret file only after proving it is
//! a regular, non-symlink file owned by the running user and readable by nobody else.

pub mod secret_file;

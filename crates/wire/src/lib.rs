//! The `/v1` wire format: what clients send and receive, as types.
//!
//! Shared by the API (which serves it) and the client SDK (which speaks it): request bodies that
//! refuse unknown members and convert into `domain` types, response bodies, state enums, the
//! event vocabulary of a session's stream and the problem document. Each type also describes
//! itself for the OpenAPI document (utoipa), so the description is the code.

pub mod browser;
pub mod calls;
pub mod email;
pub mod event;
pub mod memory;
pub mod people;
pub mod problem;
pub mod request;
pub mod response;
pub mod subscriptions;

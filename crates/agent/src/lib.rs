//! The agent loop. A worker claims queued runs (`FOR UPDATE SKIP LOCKED` with a lease), builds
//! the model's context from the session's events, calls the model, and executes the tools it
//! asks for: read-only tools at once, side-effecting ones only after the owner approved, each
//! recorded as dispatching before it runs and never repeated.

pub mod executor;
pub mod history;
mod outcome;
pub use model_client::{model, openai};
pub mod browser_tools;
pub mod call_tools;
pub mod scripted;
pub mod subscription_tools;
pub mod tools;
pub mod worker;

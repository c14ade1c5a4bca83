//! The model provider interface (`model`) and the client for any OpenAI-compatible Chat
//! Completions API (`openai`) with its configuration (`endpoint`). Its own crate so a role that
//! only asks a model (the async worker's assessment) links no agent loop and no tools.

pub mod endpoint;
pub mod model;
pub mod openai;

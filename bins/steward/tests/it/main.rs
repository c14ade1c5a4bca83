//! The client SDK and the `steward` command against the real API and worker (the offline
//! scripted model, a real database): the SDK's protocol rules in `sdk`, the command in `cli`.

mod cli;
mod sdk;
mod stack;

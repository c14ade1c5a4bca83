//! The worker against the real API and database: approvals, denials, questions, limits,
//! deadlines, an OpenAI-compatible server, workers killed mid-run, and the mail acceptance
//! against a provider speaking the Gmail wire format.

mod crash;
mod flows;
mod mail;
mod openai;
mod schedules;
mod support;

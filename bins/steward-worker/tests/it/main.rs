//! The worker against the real API and database: approvals, denials, questions, limits,
//! deadlines, an OpenAI-compatible server, and workers killed mid-run.

mod crash;
mod flows;
mod openai;
mod schedules;
mod support;

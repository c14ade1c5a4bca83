//! The worker against the real API and database: approvals, denials, questions, limits,
//! deadlines, an OpenAI-compatible server, workers killed mid-run, and the mail acceptance
//! against a provider speaking the Gmail wire format, and Email mode's Review & Send.

mod browser;
mod calls;
mod crash;
mod drafts;
mod flows;
mod logs;
mod mail;
mod memory;
mod openai;
mod schedules;
mod subscriptions;
mod support;
mod trust;
mod waiting;

#[test]
fn an_unknown_log_level_stops_it_at_start() {
    // LOG_LEVEL is every role's, read by `role::main` before the role's own configuration.
    testkit::roles::assert_refuses_an_unknown_log_level(env!("CARGO_BIN_EXE_steward-worker"));
}

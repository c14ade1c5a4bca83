//! `steward-api` as a real process: what it refuses before it starts.

#[test]
fn an_unknown_log_level_stops_it_at_start() {
    // LOG_LEVEL is every role's, read by `role::main` before the role's own configuration.
    testkit::roles::assert_refuses_an_unknown_log_level(env!("CARGO_BIN_EXE_steward-api"));
}

//! `steward-api` as a real process: what it refuses before it starts.

#[test]
fn a_flag_this_release_does_not_support_stops_it_at_start() {
    testkit::roles::assert_refuses_unsupported_flags(env!("CARGO_BIN_EXE_steward-api"), &[]);
    // LOG_LEVEL is every role's, read by `role::main` before the role's own configuration.
    testkit::roles::assert_refuses_an_unknown_log_level(env!("CARGO_BIN_EXE_steward-api"));
}

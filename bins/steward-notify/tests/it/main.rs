//! The notify role: delivery against a real HTTP/2 TLS server speaking the APNs provider API,
//! and crash safety of the role binary.

mod crash;
mod support_and_delivery;

#[test]
fn an_unknown_log_level_stops_it_at_start() {
    // LOG_LEVEL is every role's, read by `role::main` before the role's own configuration.
    testkit::roles::assert_refuses_an_unknown_log_level(env!("CARGO_BIN_EXE_steward-notify"));
}

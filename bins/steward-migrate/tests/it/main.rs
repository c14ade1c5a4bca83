//! `steward-migrate` as a real process: what it refuses before it starts.

#[test]
fn an_inline_call_provider_key_stops_it_at_start() {
    testkit::roles::assert_refuses_an_inline_call_provider_key(env!("CARGO_BIN_EXE_steward-migrate"));
}

//! The egress proxy over real sockets: a site on loopback behind TLS for its name, a client
//! that goes through the proxy as Chromium does, and requests that must not leave.

mod egress;
mod proxy;

#[test]
fn the_role_refuses_to_start_until_it_is_complete() {
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_steward-browser"))
        .output()
        .expect("run steward-browser");
    assert_eq!(output.status.code(), Some(2));
    let said = String::from_utf8_lossy(&output.stderr);
    assert!(said.contains("not available in this release"), "{said}");
    assert_eq!(said.lines().count(), 1, "one line: {said}");
}

//! The notify role: delivery against a real HTTP/2 TLS server speaking the APNs provider API,
//! and crash safety of the role binary.

mod crash;
mod support_and_delivery;

//! The call provider's signed webhook, as anyone on the network could send it.

use hmac::{Hmac, Mac};
use proptest::prelude::*;
use sha2::Sha256;
use steward_call_ingress::{Refusal, verify};

use crate::{bounded, inputs, property, serial};

const SECRET: &[u8] = b"whsec-fuzz-0123456789abcdef";

fn sign(body: &[u8]) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(SECRET).expect("any key length");
    mac.update(body);
    mac.finalize()
        .into_bytes()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect::<String>()
        .into_bytes()
}

fn bodies() -> Vec<Vec<u8>> {
    vec![
        br#"{"call_id":"call_01HZX3","event":"call.ended","status":"completed"}"#.to_vec(),
        br#"{"event":"call.started","call_id":"c-2:retry.1","data":{"from":"+15550100"}}"#.to_vec(),
    ]
}

#[test]
fn the_corpus_is_accepted_when_signed() {
    let _serial = serial();
    for body in bodies() {
        assert!(verify(SECRET, Some(&sign(&body)), &body).is_ok());
    }
}

/// Without the body's own signature nothing is accepted, whatever the header holds.
#[test]
fn an_unsigned_delivery_is_refused() {
    let claimed = prop::option::of(inputs(vec![b"0".repeat(64), b"f".repeat(64)]));
    property(file!(), (inputs(bodies()), claimed), |(body, claimed)| {
        let result = bounded(body.len(), || verify(SECRET, claimed.as_deref(), &body));
        if claimed.as_deref() != Some(sign(&body).as_slice()) {
            prop_assert!(
                matches!(result, Err(Refusal::SignatureMalformed | Refusal::SignatureMismatch)),
                "{:?}",
                result
            );
        }
        Ok(())
    });
}

/// A signed body is a receipt only when it names a well-formed call id.
#[test]
fn a_signed_body_yields_a_well_formed_call_id_or_is_refused() {
    property(file!(), inputs(bodies()), |body| {
        match bounded(body.len(), || verify(SECRET, Some(&sign(&body)), &body)) {
            Ok(call_id) => {
                prop_assert!((1..=128).contains(&call_id.len()));
                prop_assert!(
                    call_id
                        .bytes()
                        .all(|byte| byte.is_ascii_alphanumeric() || b"._:-".contains(&byte))
                );
            }
            Err(refusal) => prop_assert_eq!(refusal, Refusal::Body),
        }
        Ok(())
    });
}

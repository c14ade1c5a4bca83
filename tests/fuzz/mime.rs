//! The MIME projection: a provider's raw RFC 5322 bytes, written by whoever sent the mail.

use email::project::{ProjectError, TEXT_MAX_CHARS, project};
use proptest::prelude::*;

use crate::{bounded, inputs, property, serial};

fn corpus() -> Vec<Vec<u8>> {
    [
        include_bytes!("corpus/plain.eml").as_slice(),
        include_bytes!("corpus/bulk.eml"),
        include_bytes!("corpus/mixed.eml"),
        include_bytes!("corpus/bounce.eml"),
    ]
    .map(<[u8]>::to_vec)
    .to_vec()
}

#[test]
fn the_corpus_is_real_mail() {
    let _serial = serial();
    let projected: Vec<_> = corpus().iter().map(|raw| project(raw).expect("parses")).collect();
    assert_eq!(
        projected[0].from.as_ref().map(|from| from.address.as_str()),
        Some("ada@example.com")
    );
    assert!(
        projected[0].text.contains("Café at noon works."),
        "{:?}",
        projected[0].text
    );
    assert!(projected[1].bulk.list_unsubscribe && projected[1].bulk.precedence_bulk);
    assert!(projected[1].text.contains("Issue 3: five picks."));
    assert_eq!(projected[2].attachments.len(), 2, "{:?}", projected[2].attachments);
    assert!(projected[2].bulk.auto_submitted);
    assert!(projected[3].text.contains("could not be delivered"));
}

/// The input `cargo xtask fuzz` found: a nested multipart that trips mail-parser 0.11's debug
/// assertion. The projection refuses it instead of panicking (a release build, without the
/// assertion, parses what it can).
#[test]
fn a_message_whose_parse_panics_is_refused() {
    let _serial = serial();
    let raw = include_bytes!("corpus/nested-multipart-panic.eml");
    let projected = std::panic::catch_unwind(|| project(raw)).expect("the projection does not panic");
    if cfg!(debug_assertions) {
        assert_eq!(projected, Err(ProjectError::Unparseable));
    }
}

#[test]
fn arbitrary_mail_projects_or_is_refused() {
    property(file!(), inputs(corpus()), |raw| {
        if let Ok(message) = bounded(raw.len(), || project(&raw)) {
            prop_assert!(message.text.chars().count() <= TEXT_MAX_CHARS);
            for person in message.from.iter().chain(&message.to).chain(&message.cc) {
                prop_assert_eq!(person.address.to_lowercase(), person.address.clone());
            }
            for attachment in &message.attachments {
                prop_assert_eq!(
                    attachment.media_type.to_ascii_lowercase(),
                    attachment.media_type.clone()
                );
            }
        }
        Ok(())
    });
}

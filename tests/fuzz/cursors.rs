//! Values a client hands back: listing cursors (opaque, signed) and `Last-Event-ID`.

use api::untrusted::last_event_id;
use axum::http::HeaderValue;
use domain::ErrorCode;
use domain::cursor::{CursorCodec, CursorKind};
use proptest::prelude::*;

use crate::{bounded, inputs, property, text_inputs};

const KINDS: [CursorKind; 4] = [
    CursorKind::Sessions,
    CursorKind::Memories,
    CursorKind::EmailImportant,
    CursorKind::EmailOther,
];

fn codec() -> CursorCodec {
    CursorCodec::new([0x5a; 32])
}

fn cursor_corpus() -> Vec<Vec<u8>> {
    let codec = codec();
    vec![
        codec.encode(CursorKind::Sessions, 42).into_bytes(),
        codec.encode(CursorKind::Memories, i64::MAX).into_bytes(),
        codec.encode_bytes(CursorKind::EmailImportant, &[0; 26]).into_bytes(),
        codec.encode_bytes(CursorKind::EmailOther, &[0xff; 26]).into_bytes(),
    ]
}

/// A cursor is accepted only as the codec made it: any change to one is refused.
#[test]
fn only_a_cursor_the_codec_made_is_accepted() {
    property(
        file!(),
        (text_inputs(cursor_corpus()), 0..KINDS.len()),
        |(text, kind)| {
            let codec = codec();
            let kind = KINDS[kind];
            if let Ok(position) = bounded(text.len(), || codec.decode_bytes(kind, &text)) {
                prop_assert_eq!(codec.encode_bytes(kind, &position), text.clone());
            }
            if let Ok(position) = codec.decode(kind, &text) {
                prop_assert_eq!(codec.encode(kind, position), text);
            }
            Ok(())
        },
    );
}

#[test]
fn last_event_id_is_a_sequence_or_refused() {
    let corpus = vec![
        b"0".to_vec(),
        b"17".to_vec(),
        b" 9223372036854775807 ".to_vec(),
        b"-0".to_vec(),
        b"+5".to_vec(),
    ];
    property(file!(), inputs(corpus), |bytes| {
        let Ok(value) = HeaderValue::from_bytes(&bytes) else {
            // Not a header value at all: HTTP parsing refuses it before any handler.
            return Ok(());
        };
        match bounded(bytes.len(), || last_event_id(&value)) {
            Ok(seq) => {
                // Only digits are an event sequence: no sign, no other character.
                let text = std::str::from_utf8(&bytes).expect("accepted values are text").trim();
                prop_assert!(
                    !text.is_empty() && text.bytes().all(|byte| byte.is_ascii_digit()),
                    "{:?}",
                    text
                );
                prop_assert_eq!(text.parse::<i64>().ok(), Some(seq));
            }
            Err(problem) => prop_assert_eq!(problem.code(), ErrorCode::InvalidRequest),
        }
        Ok(())
    });
}

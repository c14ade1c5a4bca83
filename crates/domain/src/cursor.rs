//! Opaque, tamper-evident keyset cursors.
//!
//! A cursor names a position in one listing (the kind) and is authenticated with HMAC-SHA-256
//! under a deployment key, so a client can hand it back but cannot forge or edit one: any change
//! is refused as `invalid_cursor`. The position is the last row's immutable ordering key, so
//! inserts and deletes between pages never shift what a cursor points at.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use hmac::{Hmac, Mac};
use sha2::Sha256;

const VERSION: u8 = 1;
const TAG_LEN: usize = 16;
/// The version and kind bytes before a position.
const HEADER_LEN: usize = 2;

/// Which listing a cursor belongs to; a cursor from one listing is refused by another.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum CursorKind {
    Sessions = 1,
    Memories = 2,
    /// Email mode's priority inbox (`view=important`).
    EmailImportant = 3,
    /// Email mode's Other mail (`view=other`).
    EmailOther = 4,
    /// The subscription census.
    EmailSubscriptions = 5,
    /// The owner's calls.
    Calls = 6,
    /// The owner's people.
    People = 7,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("cursor is malformed, altered or from another listing")]
pub struct CursorError;

/// Signs and verifies cursors with one 32-byte key.
#[derive(Clone)]
pub struct CursorCodec {
    key: [u8; 32],
}

impl std::fmt::Debug for CursorCodec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("CursorCodec { key: <redacted> }")
    }
}

impl CursorCodec {
    pub fn new(key: [u8; 32]) -> Self {
        Self { key }
    }

    fn tag(&self, body: &[u8]) -> [u8; TAG_LEN] {
        // A 32-byte key is always a valid HMAC key.
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.key).expect("hmac accepts any key length");
        mac.update(body);
        let full = mac.finalize().into_bytes();
        let mut tag = [0u8; TAG_LEN];
        tag.copy_from_slice(&full[..TAG_LEN]);
        tag
    }

    pub fn encode(&self, kind: CursorKind, position: i64) -> String {
        self.encode_bytes(kind, &position.to_be_bytes())
    }

    pub fn decode(&self, kind: CursorKind, cursor: &str) -> Result<i64, CursorError> {
        let position: [u8; 8] = self.decode_bytes(kind, cursor)?.try_into().map_err(|_| CursorError)?;
        Ok(i64::from_be_bytes(position))
    }

    /// A cursor whose position is `position`'s bytes (a composite ordering key).
    pub fn encode_bytes(&self, kind: CursorKind, position: &[u8]) -> String {
        let mut bytes = Vec::with_capacity(HEADER_LEN + position.len() + TAG_LEN);
        bytes.push(VERSION);
        bytes.push(kind as u8);
        bytes.extend_from_slice(position);
        let tag = self.tag(&bytes);
        bytes.extend_from_slice(&tag);
        URL_SAFE_NO_PAD.encode(bytes)
    }

    /// The position bytes of a cursor this codec made for `kind`.
    pub fn decode_bytes(&self, kind: CursorKind, cursor: &str) -> Result<Vec<u8>, CursorError> {
        let bytes = URL_SAFE_NO_PAD.decode(cursor).map_err(|_| CursorError)?;
        if bytes.len() < HEADER_LEN + TAG_LEN {
            return Err(CursorError);
        }
        let (body, tag) = bytes.split_at(bytes.len() - TAG_LEN);
        let expected = self.tag(body);
        if subtle::ConstantTimeEq::ct_eq(tag, &expected[..]).unwrap_u8() != 1 {
            return Err(CursorError);
        }
        if body[0] != VERSION || body[1] != kind as u8 {
            return Err(CursorError);
        }
        Ok(body[HEADER_LEN..].to_vec())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_and_refuses_tampering() {
        let codec = CursorCodec::new([7; 32]);
        let cursor = codec.encode(CursorKind::Sessions, 42);
        assert_eq!(codec.decode(CursorKind::Sessions, &cursor), Ok(42));
        assert_eq!(codec.decode(CursorKind::Memories, &cursor), Err(CursorError));

        // Flip every character in turn: each variant is refused.
        for index in 0..cursor.len() {
            let mut chars: Vec<char> = cursor.chars().collect();
            chars[index] = if chars[index] == 'A' { 'B' } else { 'A' };
            let altered: String = chars.into_iter().collect();
            if altered != cursor {
                assert_eq!(
                    codec.decode(CursorKind::Sessions, &altered),
                    Err(CursorError),
                    "{altered}"
                );
            }
        }
        assert_eq!(codec.decode(CursorKind::Sessions, "not a cursor"), Err(CursorError));
        assert_eq!(codec.decode(CursorKind::Sessions, ""), Err(CursorError));

        let other_key = CursorCodec::new([8; 32]);
        assert_eq!(other_key.decode(CursorKind::Sessions, &cursor), Err(CursorError));
    }

    #[test]
    fn composite_positions_round_trip_in_their_own_listing() {
        let codec = CursorCodec::new([7; 32]);
        let position: Vec<u8> = (0..26).collect();
        let cursor = codec.encode_bytes(CursorKind::EmailImportant, &position);
        assert_eq!(codec.decode_bytes(CursorKind::EmailImportant, &cursor), Ok(position));
        assert_eq!(codec.decode_bytes(CursorKind::EmailOther, &cursor), Err(CursorError));
        // A session cursor is 8 bytes of position: an inbox cursor is not one.
        assert_eq!(codec.decode(CursorKind::EmailImportant, &cursor), Err(CursorError));
    }
}
